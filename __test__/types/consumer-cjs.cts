// A CommonJS consumer (module node16, .cts): `import = require`, a default
// import (module.exports) and named imports resolve to index.d.ts.
import pkg = require('@suaveplan/api-sandbox-permissions')
import dflt from '@suaveplan/api-sandbox-permissions'
import { createChecker, type Decision } from '@suaveplan/api-sandbox-permissions'
import testing = require('@suaveplan/api-sandbox-permissions/testing')
import checkedFs = require('@suaveplan/api-sandbox-permissions/fs')

const checker = pkg.createChecker({ secrets: ['KEY'] }, { plugin: 'p' })
const d: Decision = checker.checkCapability('secrets.get', { name: 'KEY' })
const d2: Decision = dflt.createChecker({ fs: ['/a/**'] }, { plugin: 'p' }).checkFs('/a/b', 'read')
const d3: Decision = createChecker({}, { plugin: 'p' }).checkCapability('events.publish', { topic: 'a.b', event: {} })
const n: number = testing.conformanceCases().length
// @ts-expect-error at payload: 'nam' is not a field of the secrets.get payload
checker.checkCapability('secrets.get', { nam: 'X' })
// @ts-expect-error at payload: 'topik' is not 'topic'
checker.assertCapability('events.subscribe', { topik: 'a.*' })


import wasi = require('@suaveplan/api-sandbox-permissions/wasi')
const wasiGate = new wasi.WasiGate(pkg.createChecker({ fs: ['/a/**'] }, { plugin: 'p' }))
const unlinked: number = wasiGate.pathCall('path_unlink_file', { path: '/a/x' }).errno
const opened: Promise<checkedFs.CheckedFile> = checkedFs.openChecked(checker, '/a/b', { mode: 'write', append: true })

export { d, d2, d3, n, opened }
