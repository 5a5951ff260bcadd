import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import type { Teardown } from '../helper.js'
import { startSessionCore } from '../../dev/session-core/index.js'

// The session core reached through a counting proxy, so a test sees what the core was asked
// (which requests made it check a password) and can make it slow or failing. The session library
// keeps one configuration per process: a test file that uses this starts it once, before any app.
export interface CountingCore {
  /** Every request the core received, as `METHOD path`. */
  requests: string[]
  /** The requests that made the core check a password. */
  passwordChecks: string[]
  /** While above 0, the core takes this long to make a password-reset token (a slow core, or a slow mail). */
  resetTokenDelayMs: number
  /** While set, the core fails every password check with an error of its own. */
  failPasswordChecks: boolean
}

export const CORE_INTERNAL_FAILURE = 'java.lang.IllegalStateException at /usr/lib/supertokens/core/internal.jar'

export async function startCountingCore (t: Teardown): Promise<CountingCore> {
  const apiKey = randomBytes(16).toString('hex')
  const core = await startSessionCore({ apiKey })
  const target = new URL(core.uri)
  const counting: CountingCore = { requests: [], passwordChecks: [], resetTokenDelayMs: 0, failPasswordChecks: false }
  const forward = (incoming: IncomingMessage, outgoing: ServerResponse): void => {
    const forwarded = httpRequest({ host: target.hostname, port: target.port, path: incoming.url, method: incoming.method, headers: incoming.headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(outgoing)
    })
    incoming.pipe(forwarded)
  }
  const proxy = createServer((incoming: IncomingMessage, outgoing: ServerResponse) => {
    const url = incoming.url ?? ''
    counting.requests.push(`${incoming.method ?? ''} ${url}`)
    if (incoming.method === 'POST' && /\/recipe\/signin$/.test(url)) {
      counting.passwordChecks.push(url)
      if (counting.failPasswordChecks) {
        incoming.resume()
        outgoing.writeHead(500, { 'content-type': 'text/plain' }).end(CORE_INTERNAL_FAILURE)
        return
      }
    }
    const delay = incoming.method === 'POST' && /\/recipe\/user\/password\/reset\/token$/.test(url) ? counting.resetTokenDelayMs : 0
    setTimeout(() => { forward(incoming, outgoing) }, delay)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  process.env.SESSIONS_URI = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  process.env.SESSIONS_KEY = apiKey
  t.teardown(async () => {
    proxy.close()
    await core.close()
  })
  return counting
}

/** A password sign-up of the same shape as signInRequest, with the name sign-up needs. */
export function signUpRequest (email: string, password: string, address = '198.51.100.7') {
  const request = signInRequest(email, password, address)
  return { ...request, url: '/api/auth/signup', payload: { formFields: [{ id: 'name', value: email.split('@')[0] ?? 'someone' }, ...request.payload.formFields] } }
}

export function signInRequest (email: string, password: string, address = '198.51.100.7') {
  return {
    method: 'POST' as const,
    url: '/api/auth/signin',
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', 'x-forwarded-for': address },
    payload: { formFields: [{ id: 'email', value: email }, { id: 'password', value: password }] }
  }
}
