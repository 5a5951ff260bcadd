// Apple answers a sign-in by posting a form to /auth/extprovider/callback (response_mode=form_post).
// The web server turns that post into a GET of the same route, so the single-page callback finishes
// it like any provider's answer; the ID token stays out of the URL, and only a small urlencoded
// body is read.
import { request as httpRequest } from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'tap'
import type { Teardown } from '../helper.js'
import { CALLBACK_FORM_LIMIT_BYTES, callbackLocationFromForm, startWebServer } from '../../web/server.js'

const FORM = 'application/x-www-form-urlencoded'

async function servedPage (t: Teardown): Promise<string> {
  const dist = await mkdtemp(join(tmpdir(), 'calendar-web-dist-'))
  t.teardown(() => rm(dist, { recursive: true, force: true }))
  await writeFile(join(dist, 'index.html'), '<!doctype html><title>Calendar</title><div id="app"></div>')
  const server = await startWebServer({ port: 0, apiUrl: 'http://127.0.0.1:3000/api', distDir: dist })
  t.teardown(() => server.close())
  return server.url
}

/** A body sent in chunks without a content-length, as a client that does not announce its size. */
async function postChunked (url: string, chunk: string, times: number): Promise<number> {
  return await new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers: { 'content-type': FORM } }, (response) => {
      response.resume()
      resolve(response.statusCode ?? 0)
    })
    // The server may close the connection once it has refused; that is its answer, not an error.
    request.on('error', (error: NodeJS.ErrnoException) => { if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') reject(error) })
    for (let index = 0; index < times; index++) request.write(chunk)
    request.end()
  })
}

test('the form becomes a GET of the callback with code, state and user; the ID token is dropped', async (t) => {
  const web = await servedPage(t)
  const user = JSON.stringify({ name: { firstName: 'Cy', lastName: 'Example' }, email: 'cy@example.com' })
  const body = new URLSearchParams({ code: 'c0de.one', state: 'S'.repeat(43), id_token: 'eyJhbGciOi.payload.signature', user })
  const response = await fetch(`${web}/auth/extprovider/callback`, { method: 'POST', headers: { 'content-type': FORM }, body, redirect: 'manual' })
  t.equal(response.status, 303, 'See Other: the browser follows with a GET')
  const location = response.headers.get('location') ?? ''
  t.match(location, /^\/auth\/extprovider\/callback\?/, 'to the same route, on this origin')
  const query = new URL(location, web).searchParams
  t.same(Object.fromEntries(query), { code: 'c0de.one', state: 'S'.repeat(43), user }, 'code, state and Apple\'s one-time user field')
  t.notOk(location.includes('id_token') || location.includes('eyJhbGciOi'), 'the ID token is not carried')
  t.equal(response.headers.get('cache-control'), 'no-store')

  const followed = await fetch(new URL(location, web))
  t.equal(followed.status, 200, 'the callback route serves the page')
  t.match(await followed.text(), /<div id="app">/)
})

test('a declined authorization is carried too, so the page can say so', async (t) => {
  const web = await servedPage(t)
  const response = await fetch(`${web}/auth/extprovider/callback`, {
    method: 'POST', headers: { 'content-type': `${FORM}; charset=utf-8` }, body: 'error=user_cancelled_authorize&state=abc', redirect: 'manual'
  })
  t.equal(response.status, 303)
  t.equal(response.headers.get('location'), '/auth/extprovider/callback?state=abc&error=user_cancelled_authorize')
})

test('what is not an answer of a provider is refused', async (t) => {
  const web = await servedPage(t)
  const post = async (body: string | Uint8Array, type = FORM) =>
    (await fetch(`${web}/auth/extprovider/callback`, { method: 'POST', headers: { 'content-type': type }, body, redirect: 'manual' })).status
  t.equal(await post('state=abc'), 400, 'neither code nor error')
  t.equal(await post('code=a&code=b&state=abc'), 400, 'a field given twice')
  t.equal(await post(new Uint8Array([0x63, 0x6f, 0x64, 0x65, 0x3d, 0xff, 0xfe])), 400, 'not UTF-8')
  t.equal(await post(JSON.stringify({ code: 'a' }), 'application/json'), 415, 'not a form')
  t.equal(await post(`code=${'a'.repeat(CALLBACK_FORM_LIMIT_BYTES)}`), 413, 'larger than any answer of Apple\'s (announced size)')
  t.equal(await postChunked(`${web}/auth/extprovider/callback`, `code=${'a'.repeat(1024)}`, 16), 413, 'and when the size is not announced')
  t.equal((await fetch(`${web}/day`, { method: 'POST', headers: { 'content-type': FORM }, body: 'code=a' })).status, 405, 'only the callback route takes a post')
})

test('callbackLocationFromForm keeps what the callback reads, in a fixed order', async (t) => {
  t.equal(callbackLocationFromForm('state=s&code=c&scope=x&id_token=t'), '/auth/extprovider/callback?code=c&state=s')
  t.equal(callbackLocationFromForm('code=a%20b'), '/auth/extprovider/callback?code=a+b')
  t.equal(callbackLocationFromForm(''), null)
})
