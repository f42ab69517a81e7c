// A well-behaved Deno plugin: reads its input, calls its API, reads its one
// declared secret, writes its result. Every call passes the manifest.
// Run by examples/deno/run.js under the permission broker: deno run good.ts <root> <api>
const [root, api] = Deno.args
const input = (await Deno.readTextFile(`${root}/data/input.txt`)).trim()
const fromApi = await (await fetch(`${api}/hello`)).text()
const greeting = Deno.env.get('GREETING')
await Deno.writeTextFile(`${root}/out/deno-result.json`, JSON.stringify({ input, api: fromApi, greeting }))
console.log(`wrote out/deno-result.json (${input} / ${fromApi} / ${greeting})`)
