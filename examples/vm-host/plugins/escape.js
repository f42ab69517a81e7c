// Runs in the process tier with a leaked host function (as a vm escape
// would give it): it reaches the child's real `process` and its modules, and
// every attempt still fails with EPERM, because the child is locked down.
const p = leakedHostFunction.constructor('return process')()
const req = p.mainModule ? p.mainModule.require : null
const fs = req('fs')
const cp = req('child_process')
const net = req('net')
const out = []
const attempt = (label, fn) => {
  try {
    fn()
    out.push(`${label}: UNEXPECTED success`)
  } catch (e) {
    out.push(`${label}: ${e.code || e.name}`)
  }
}
out.push(`reached process ${typeof p.pid === 'number' ? 'pid ' + p.pid : '?'}`)
attempt('read /etc/passwd', () => fs.readFileSync('/etc/passwd'))
attempt('write /tmp/pwned', () => fs.writeFileSync('/tmp/pwned', 'x'))
attempt('spawn /bin/sh', () => {
  const r = cp.spawnSync('/bin/sh', ['-c', 'id'])
  if (r.error) throw r.error
})
const sock = await new Promise((resolve) => net.connect(9, '127.0.0.1').on('error', (e) => resolve(e.code)).on('connect', () => resolve('UNEXPECTED connect')))
out.push(`connect 127.0.0.1:9: ${sock}`)
for (const line of out) await console.log(line)
await console.log('now spinning forever')
for (;;) {}
