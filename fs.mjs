import cjs from './fs.js'

export const { openChecked, CheckedFile } = cjs
export default cjs
