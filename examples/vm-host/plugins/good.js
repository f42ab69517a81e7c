// A well-behaved plugin: reads its input, calls its API, reads its one
// secret, writes a result and publishes an event. Runs inside a vm.Context;
// `fs`, `fetch`, `secrets`, `events`, `console` and `config` are the host's
// capability proxies (see worker.js).
const input = await fs.readFile(`${config.root}/data/input.txt`)
const res = await fetch(`${config.api}/hello?from=good-plugin`)
const greeting = await secrets.get('GREETING')
await fs.writeFile(`${config.root}/out/result.json`, JSON.stringify({ input: input.trim(), api: res.body, greeting }))
await events.publish('demo.finished', { ok: true })
await console.log(`done: ${res.status} ${res.body}`)
return 'ok'
