'use strict'
// The fourth red team's lesser findings (host scale round), pinned. (Its
// other note, an ill-formed fs/fetch payload string being invalid_payload
// rather than checkFs's / checkFetch's reason, is the reading the boundary
// oracle pins: the SPEC names only shape and length; left as it is.)
const test = require('node:test')
const assert = require('node:assert/strict')
const { createChecker } = require('..')

const options = { plugin: 'p', platform: 'posix' }

test('checkFetchAddress: brackets hold an IPv6 address only; a bracketed IPv4 is no address', () => {
  const c = createChecker({ fetch: ['https://api.example.com'] }, options)
  assert.equal(c.checkFetchAddress('https://api.example.com/', '8.8.8.8').allowed, true)
  assert.equal(c.checkFetchAddress('https://api.example.com/', '[2001:4860:4860::8888]').allowed, true)
  for (const ip of ['[8.8.8.8]', '[127.0.0.1]', '[::ffff:8.8.8.8', '8.8.8.8]']) {
    const d = c.checkFetchAddress('https://api.example.com/', ip)
    assert.equal(d.allowed, false, ip)
  }
})
