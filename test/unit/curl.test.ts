/**
 * Copy as curl (src/request-log/curl.ts): what a POSIX shell makes of the command is the call as
 * logged, whatever its body holds, and the credential is a variable, never a value.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { curlCommand, shellQuote } from '../../src/request-log/curl.js'

/** What `sh` passes a program for the words of `line` (each word on a line of its own). */
const words = (line: string, env: Record<string, string> = {}) =>
  execFileSync('sh', ['-c', `printf '%s\\n' ${line}`], { env: { PATH: process.env.PATH ?? '', ...env } }).toString('utf8')

describe('copy as curl', () => {
  it('quotes every word so that the shell runs nothing a caller sent', () => {
    for (const text of ["it's", '$(touch /tmp/x) `id` $HOME', "'; rm -rf / #", 'a\nb', '\\"', '']) {
      assert.equal(words(shellQuote(text)), `${text}\n`)
    }
  })

  it('names the key as $PI_API_KEY, a user token as $PI_ACCESS_TOKEN, and leaves out the connection and credential headers', () => {
    const { curl, complete } = curlCommand(
      {
        method: 'POST',
        path: '/v2/payments',
        query: 'a=1',
        key_id: 'key_1',
        user_uid: null,
        request_headers: { authorization: 'Key [redacted]', host: 'x', 'content-type': 'application/json', cookie: 'c=1' },
        request_body: `{"memo":"it's $(x)"}`,
      },
      'https://plinth.example/',
    )
    assert.equal(complete, true)
    const argv = words(curl.replaceAll(' \\\n  ', ' ').replace(/^curl /, ''), { PI_API_KEY: 'the-key' }).split('\n')
    assert.deepEqual(argv.slice(0, -1), [
      '-X',
      'POST',
      'https://plinth.example/v2/payments?a=1',
      '-H',
      'Authorization: Key the-key',
      '-H',
      'content-type: application/json',
      '--data-raw',
      `{"memo":"it's $(x)"}`,
    ])
    const byUser = curlCommand(
      { method: 'GET', path: '/v2/me', query: null, key_id: null, user_uid: 'u1', request_headers: null, request_body: null },
      'https://plinth.example',
    )
    assert.equal(byUser.curl, `curl 'https://plinth.example/v2/me' \\\n  -H "Authorization: Bearer $PI_ACCESS_TOKEN"`)
  })

  it('says when the log stored a part of the call redacted', () => {
    const entry = {
      method: 'GET',
      path: '/v2/x/[redacted]',
      query: null,
      key_id: 'k',
      user_uid: null,
      request_headers: null,
      request_body: null,
    }
    assert.equal(curlCommand(entry, 'https://p.example').complete, false)
  })
})
