import cjs from './testing.js'

export const { runPermissionsConformance, conformanceCases, runCase, packageChecker, Skip, CONFORMANCE_PLUGIN } = cjs
export default cjs
