import cjs from './wasi.js'

export const { WasiGate, WASI_CALLS, ERRNO, openMode } = cjs
export default cjs
