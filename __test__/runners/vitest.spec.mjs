// Run with Vitest (no globals): describe/it passed explicitly.
import { createRequire } from 'node:module'
import { describe, it } from 'vitest'

createRequire(import.meta.url)('./suites.cjs').register({ describe, it })
