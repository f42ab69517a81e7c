// The runners' own describe/it types are accepted by runPermissionsConformance:
// Vitest's, Jest's (@jest/globals) and node:test's. Compiled by
// __test__/types.test.js with tsconfig.runners.json (skipLibCheck: the
// runners' own declaration files are not this package's to check).
import { describe as vd, it as vi } from 'vitest'
import { describe as jd, it as ji } from '@jest/globals'
import { describe as nd, it as ni } from 'node:test'
import { runPermissionsConformance, packageChecker } from '@suaveplan/api-sandbox-permissions/testing'

runPermissionsConformance('vitest', packageChecker(), { describe: vd, it: vi })
runPermissionsConformance('jest', packageChecker(), { describe: jd, it: ji })
runPermissionsConformance('node:test', packageChecker(), { describe: nd, it: ni })
