// A CalDAV server of the tests' own that misbehaves on purpose: it names hrefs on another origin,
// answers more than any answer should be, floods small elements, redirects, or never answers.
// Every request it receives is recorded (method, path, whether it carried the password), so a test
// can tell what Sync sent where.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'

export interface HostileMode {
  /** The principal href current-user-principal names (default: this server's /principal/). */
  principal?: string
  /** Calendar hrefs the home lists (default: this server's /calendars/work/). */
  calendars?: string[]
  /** Answers every PROPFIND of the home with this many bytes of a well-formed multistatus. */
  hugeHome?: number
  /** Answers every PROPFIND of the home with this many tiny empty <d:response> elements. */
  floodHome?: number
  /**
   * Lists the home's calendars, then about this many bytes of small <d:response> elements (an
   * href each, nothing else): an answer under the limit that takes long to parse.
   */
  paddedHome?: number
  /** Paths answered with a redirect (its status and Location) instead of what they hold. */
  redirects?: Record<string, { status: number, location: string }>
  /** Paths that name the current-user-principal (default: the well-known URI and /). */
  principalAt?: string[]
  /** Accepts every request and never answers it. */
  silent?: boolean
}

export interface HostileDav {
  /** http://localhost:<port> (the name; the tests' Sync allows `localhost` by name only). */
  url: string
  port: number
  requests: Array<{ method: string, path: string, authorized: boolean }>
  mode: HostileMode
}

const MULTISTATUS_HEAD = '<?xml version="1.0" encoding="utf-8"?><d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">'

function propResponse (href: string, props: string): string {
  return `<d:response><d:href>${href}</d:href><d:propstat><d:prop>${props}</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>`
}

function multistatus (reply: ServerResponse, body: string): void {
  reply.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' })
  reply.end(`${MULTISTATUS_HEAD}${body}</d:multistatus>`)
}

function streamed (reply: ServerResponse, bytes: number, piece: string, first = ''): void {
  reply.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' })
  reply.write(`${MULTISTATUS_HEAD}${first}`)
  let sent = 0
  const chunk = piece.repeat(Math.max(1, Math.floor(65536 / piece.length)))
  const more = (): void => {
    while (sent < bytes) {
      sent += chunk.length
      if (!reply.write(chunk)) {
        reply.once('drain', more)
        return
      }
    }
    reply.end('</d:multistatus>')
  }
  reply.on('error', () => {})
  more()
}

export async function startHostileDav (t: Test, mode: HostileMode = {}): Promise<HostileDav> {
  const requests: HostileDav['requests'] = []
  const held: ServerResponse[] = []
  const server = createServer((request: IncomingMessage, reply: ServerResponse) => {
    const path = request.url ?? '/'
    requests.push({ method: request.method ?? '', path, authorized: request.headers.authorization !== undefined })
    request.resume()
    if (dav.mode.silent === true) {
      held.push(reply)
      return
    }
    if (request.method !== 'PROPFIND' && request.method !== 'REPORT') {
      reply.writeHead(405).end()
      return
    }
    const redirect = dav.mode.redirects?.[path]
    if (redirect !== undefined) {
      reply.writeHead(redirect.status, { location: redirect.location }).end()
    } else if ((dav.mode.principalAt ?? ['/.well-known/caldav', '/']).includes(path)) {
      multistatus(reply, propResponse(path, `<d:current-user-principal><d:href>${dav.mode.principal ?? '/principal/'}</d:href></d:current-user-principal>`))
    } else if (path === '/principal/') {
      multistatus(reply, propResponse(path, '<c:calendar-home-set><d:href>/calendars/</d:href></c:calendar-home-set>'))
    } else if (path === '/calendars/') {
      if (dav.mode.hugeHome !== undefined) return streamed(reply, dav.mode.hugeHome, propResponse('/calendars/x/', '<d:displayname>padding padding padding</d:displayname>'))
      if (dav.mode.floodHome !== undefined) return streamed(reply, dav.mode.floodHome * 14, '<d:response/>')
      const calendars = dav.mode.calendars ?? ['/calendars/work/']
      const listing = [
        propResponse('/calendars/', '<d:resourcetype><d:collection/></d:resourcetype>'),
        ...calendars.map((href, index) => propResponse(href, `<d:resourcetype><d:collection/><c:calendar/></d:resourcetype><d:displayname>Calendar ${index + 1}</d:displayname>`))
      ].join('')
      if (dav.mode.paddedHome !== undefined) return streamed(reply, dav.mode.paddedHome, '<d:response><d:href>/calendars/padding/</d:href></d:response>', listing)
      multistatus(reply, listing)
    } else {
      multistatus(reply, '')
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    for (const reply of held) reply.destroy()
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  const port = (server.address() as AddressInfo).port
  const dav: HostileDav = { url: `http://localhost:${port}`, port, requests, mode }
  return dav
}
