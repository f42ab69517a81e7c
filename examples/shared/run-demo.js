'use strict'
// What both demos (examples/vm-host/demo.js, examples/wasi-host/demo.js) do
// around their own steps: collect the printed lines, and when run as a
// script, print (or emit as JSON with --json) and set the exit code.

/** `{ lines, log }`: `log(line)` keeps the line and prints it unless `json`. */
function demoLog(json) {
  const lines = []
  const log = (line) => {
    lines.push(line)
    if (!json) console.log(line)
  }
  return { lines, log }
}

/** Runs `main({ json })` when `mod` is the entry script; exit code 0 only when `ok(result)`. */
function runDemo(mod, main, ok) {
  if (require.main !== mod) return
  const json = process.argv.includes('--json')
  main({ json }).then(
    (r) => {
      if (json) console.log(JSON.stringify(r))
      process.exitCode = ok(r) ? 0 : 1
    },
    (e) => {
      console.error(e)
      process.exitCode = 1
    },
  )
}

module.exports = { demoLog, runDemo }
