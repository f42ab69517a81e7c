// A hostile plugin: every trick below must be denied by the host's checks,
// and the final busy loop must be stopped by the CPU/wall-clock budget.
const attempt = async (label, fn) => {
  try {
    await fn()
    await console.log(`UNEXPECTED: ${label} succeeded`)
  } catch (e) {
    await console.log(`${label}: ${e.code || e.name} ${e.details ? e.details.reason : e.message}`)
  }
}
const root = config.root
await attempt('path traversal', () => fs.readFile(`${root}/data/../secret-outside.txt`))
await attempt('encoded traversal is just a name', () => fs.readFile(`${root}/data/%2e%2e/secret-outside.txt`))
await attempt('symlink out of the grant', () => fs.readFile(`${root}/data/link-to-secret`))
await attempt('.. after a directory link', () => fs.readFile(`${root}/data/here/../secret-outside.txt`))
await attempt('write outside the write glob', () => fs.writeFile(`${root}/out/evil.sh`, 'rm -rf /'))
await attempt('write into a read-only grant', () => fs.writeFile(`${root}/data/input.txt`, 'pwned'))
await attempt('cloud metadata', () => fetch('http://169.254.169.254/latest/meta-data/'))
await attempt('backslash before the at sign', () => fetch(`http://evil.example\\@${config.apiHost}/`))
await attempt('granted host as userinfo', () => fetch(`http://${config.apiHost}@evil.example/`))
await attempt('hex IPv4 on another port', () => fetch(`http://0x7f.1:${config.apiPort + 1}/`))
await attempt('file scheme', () => fetch('file:///etc/passwd'))
await attempt('redirect to the metadata service', () => fetch(`${config.api}/redirect-to-metadata`))
await attempt('undeclared secret', () => secrets.get('AWS_SECRET_ACCESS_KEY'))
await attempt('undeclared topic', () => events.publish('admin.shutdown', {}))
await attempt('prototype-key capability', () => capability('__proto__', { name: 'GREETING' }))
await attempt('escape through the global', async () => {
  const p = globalThis.constructor.constructor('return process')()
  return p.mainModule
})
await attempt('escape through a capability result', async () => {
  const r = fs.readFile(`${root}/data/input.txt`)
  return r.constructor.constructor('return process')()
})
await console.log('now spinning forever')
for (;;) {}
