import { test } from 'tap'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { googleFetch, ProviderAnswerTooLargeError, providerFetch } from '../../sync/providers/buffered-fetch.js'
import type { Teardown } from '../helper.js'

// A server that answers like Radicale: a large body, then it closes the connection at once.
async function closingServer (t: Teardown, body: Buffer, status = '207 Multi-Status'): Promise<string> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.once('data', () => {
      socket.write(`HTTP/1.1 ${status}\r\nContent-Type: application/xml\r\nETag: "v1"\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`)
      socket.write(body)
      socket.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { for (const socket of sockets) socket.destroy(); server.close() })
  const address = server.address()
  return `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/`
}

async function readSlowly (answer: Response): Promise<number> {
  const reader = answer.body?.getReader()
  let length = 0
  for (;;) {
    const chunk = await reader?.read()
    if (chunk === undefined || chunk.done) return length
    length += chunk.value.length
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

test('large answers from a server that closes the connection arrive whole, however slowly they are read', async (t) => {
  // A reader slower than the socket (a busy process) left the body waiting under backpressure when
  // the server closed the connection; through the global fetch that ended the process.
  const body = Buffer.alloc(1024 * 1024, 0x61)
  const url = await closingServer(t, body)
  for (let round = 0; round < 10; round++) {
    const answer = await googleFetch(url, { method: 'REPORT', headers: { Depth: '1' }, body: '<x/>' })
    t.equal(answer.status, 207)
    t.equal(answer.headers.get('etag'), '"v1"')
    t.equal(await readSlowly(answer), body.length)
  }
})

test('an answer over the limit fails the request and nothing else, whether its length is declared or found while reading', async (t) => {
  const limited = providerFetch({ provider: 'caldav', maxBytes: 1024 })
  const declared = await closingServer(t, Buffer.alloc(4096, 0x61))
  const streamed = createHttpServer((request, response) => {
    request.resume()
    // No Content-Length: the size is known only once the bytes have come.
    response.writeHead(207, { 'content-type': 'application/xml' })
    response.write(Buffer.alloc(800, 0x61))
    setTimeout(() => response.end(Buffer.alloc(800, 0x61)), 20)
  })
  await new Promise<void>((resolve) => streamed.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { streamed.closeAllConnections(); streamed.close() })
  const streamedUrl = `http://127.0.0.1:${(streamed.address() as AddressInfo).port}/`
  for (let round = 0; round < 3; round++) {
    await t.rejects(limited(declared, { method: 'REPORT', body: '<x/>' }), ProviderAnswerTooLargeError, 'declared larger than the limit')
    await t.rejects(limited(streamedUrl, { method: 'REPORT', body: '<x/>' }), ProviderAnswerTooLargeError, 'found larger while read')
  }
  // The process lives on (an abort error nobody heard would have ended it) and asks again.
  await new Promise((resolve) => setTimeout(resolve, 50))
  const small = await closingServer(t, Buffer.alloc(100, 0x61))
  t.equal((await limited(small, { method: 'REPORT', body: '<x/>' })).status, 207)
})

test('an answer without a body, and a request the caller aborts', async (t) => {
  const url = await closingServer(t, Buffer.alloc(0), '204 No Content')
  const empty = await googleFetch(url, { method: 'DELETE', headers: new Headers({ 'If-Match': '"v1"' }) })
  t.equal(empty.status, 204)
  t.equal(await empty.text(), '')
  await t.rejects(googleFetch(url, { method: 'GET', signal: AbortSignal.abort() }), { name: 'AbortError' })
})

test('the bodies the adapters send: a form (with fetch\'s content type), bytes and text; a stream is refused, not dropped', async (t) => {
  const received: Array<{ method: string, type: string | undefined, body: string }> = []
  const server = createHttpServer((request, response) => {
    let body = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => { body += chunk })
    request.on('end', () => {
      received.push({ method: request.method ?? '', type: request.headers['content-type'], body })
      response.end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.close() })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`

  await googleFetch(url, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'r 1' }) })
  await googleFetch(url, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: new TextEncoder().encode('{"a":1}') })
  await googleFetch(url, { method: 'PUT', headers: { 'content-type': 'text/calendar' }, body: 'BEGIN:VCALENDAR' })
  t.same(received, [
    { method: 'POST', type: 'application/x-www-form-urlencoded;charset=UTF-8', body: 'grant_type=refresh_token&refresh_token=r+1' },
    { method: 'PATCH', type: 'application/json', body: '{"a":1}' },
    { method: 'PUT', type: 'text/calendar', body: 'BEGIN:VCALENDAR' }
  ])
  await t.rejects(googleFetch(url, { method: 'POST', body: new Blob(['x']) }), TypeError, 'a body it cannot send is an error')
  t.equal(received.length, 3, 'and nothing was sent for it')
})
