// A plain Microsoft client of the stand-in, apart from the Sync service: "another device" that needs
// what only Graph tells (an occurrence's id), and the benchmark's baseline reader. It signs in with
// the stack's application the way any client does (consent, code exchange), so nothing of Sync's
// own grant is borrowed.
import type { MicrosoftStandIn } from '../../dev/microsoft/index.js'
import { MICROSOFT_CLIENT } from './stack.js'

export interface GraphClient {
  /** A GET of a Graph path (`/me/...`) or of a link Graph answered (nextLink, deltaLink), as JSON. */
  get: <T>(pathOrLink: string, headers?: Record<string, string>) => Promise<T>
}

/**
 * Signs `email` in at the stand-in with the stack's application. The consent redirects to the
 * backend's callback; the code is taken from that redirect without following it, so Sync never
 * sees this grant.
 */
export async function graphClient (microsoft: MicrosoftStandIn, email: string, redirectUri: string): Promise<GraphClient> {
  const authorize = new URL(`${microsoft.url}/common/oauth2/v2.0/authorize`)
  authorize.search = new URLSearchParams({
    client_id: MICROSOFT_CLIENT.clientId,
    response_type: 'code',
    redirect_uri: redirectUri,
    scope: 'openid offline_access Calendars.ReadWrite',
    state: 'graph-client',
    login_hint: email,
    approve: '1'
  }).toString()
  const consent = await fetch(authorize, { redirect: 'manual' })
  const code = new URL(consent.headers.get('location') ?? 'about:blank').searchParams.get('code')
  if (code === null) throw new Error(`consent answered ${consent.status}: ${consent.headers.get('location') ?? await consent.text()}`)
  const exchanged = await fetch(`${microsoft.url}/common/oauth2/v2.0/token`, {
    method: 'POST',
    body: new URLSearchParams({ client_id: MICROSOFT_CLIENT.clientId, client_secret: MICROSOFT_CLIENT.clientSecret, grant_type: 'authorization_code', code, redirect_uri: redirectUri })
  })
  const { access_token: accessToken } = await exchanged.json() as { access_token?: string }
  if (accessToken === undefined) throw new Error(`the code exchange answered ${exchanged.status}`)
  return {
    get: async <T>(pathOrLink: string, headers: Record<string, string> = {}): Promise<T> => {
      const url = pathOrLink.startsWith('http') ? pathOrLink : `${microsoft.graphUrl}${pathOrLink}`
      const response = await fetch(url, { headers: { authorization: `Bearer ${accessToken}`, ...headers } })
      if (!response.ok) throw new Error(`Graph answered ${response.status} for ${url}: ${await response.text()}`)
      return await response.json() as T
    }
  }
}

/** The id of a series' occurrence that starts on `day` (UTC), as Graph's instances list names it. */
export async function occurrenceOn (graph: GraphClient, seriesId: string, day: string): Promise<string> {
  const query = new URLSearchParams({ startDateTime: `${day}T00:00:00Z`, endDateTime: `${day}T23:59:59Z` })
  const page = await graph.get<{ value: Array<{ id: string }> }>(`/me/events/${encodeURIComponent(seriesId)}/instances?${query.toString()}`)
  const first = page.value[0]
  if (first === undefined) throw new Error(`no occurrence of ${seriesId} on ${day}`)
  return first.id
}
