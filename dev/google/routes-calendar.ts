// The Calendar API v3 subset, under `/calendar/v3/` as on www.googleapis.com: calendarList,
// calendars.get, events (list, get, insert, patch, update, delete, watch) and channels.stop.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ACCESS_ROLES, atLeast, canWrite } from './calendars.js'
import type { AccessRole, Calendar, ListQuery } from './calendars.js'
import { readWatchRequest } from './channels.js'
import { ApiError, apiErrors } from './errors.js'
import { etagOf, isValidZone, readEventWrite, renderEvent } from './events.js'
import type { StoredEvent } from './events.js'
import type { Authenticated } from './identity.js'
import type { GoogleState } from './state.js'
import { decodeOpaque, encodeOpaque } from '../stand-in/opaque.js'

declare module 'fastify' {
  interface FastifyRequest {
    google?: Authenticated
  }
}

const SCOPE = 'https://www.googleapis.com/auth/'
const scopes = (...names: string[]): string[] => names.map((name) => SCOPE + name)
const READ_EVENTS = scopes('calendar', 'calendar.readonly', 'calendar.events', 'calendar.events.readonly', 'calendar.events.owned', 'calendar.events.owned.readonly')
const WRITE_EVENTS = scopes('calendar', 'calendar.events', 'calendar.events.owned')
const READ_CALENDAR_LIST = scopes('calendar', 'calendar.readonly', 'calendar.calendarlist', 'calendar.calendarlist.readonly')
const READ_CALENDARS = scopes('calendar', 'calendar.readonly', 'calendar.calendars', 'calendar.calendars.readonly')
const ANY_CALENDAR = [...new Set([...READ_EVENTS, ...READ_CALENDAR_LIST, ...READ_CALENDARS])]

/** Parameters that make an incremental list answer 400 (events.list reference, `syncToken`). */
const NOT_WITH_SYNC_TOKEN = ['iCalUID', 'orderBy', 'privateExtendedProperty', 'q', 'sharedExtendedProperty', 'timeMin', 'timeMax', 'updatedMin']
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?([zZ]|[+-]\d{2}:\d{2})$/
const DEFAULT_EVENTS_PAGE = 250
const MAX_EVENTS_PAGE = 2500
const DEFAULT_CALENDAR_LIST_PAGE = 100
const MAX_CALENDAR_LIST_PAGE = 250

type Query = Record<string, unknown>

const deletedEntry = (entry: { id: string, version: number }): Record<string, unknown> =>
  ({ kind: 'calendar#calendarListEntry', etag: `"${entry.version}"`, id: entry.id, deleted: true })

const queryOf = (request: FastifyRequest): Query => (request.query ?? {}) as Query
const paramsOf = (request: FastifyRequest): Record<string, string> => (request.params ?? {}) as Record<string, string>

function textParam (query: Query, name: string): string | undefined {
  const value = query[name]
  if (Array.isArray(value)) return typeof value[0] === 'string' ? value[0] : undefined
  return typeof value === 'string' ? value : undefined
}

function booleanParam (query: Query, name: string): boolean | undefined {
  const value = textParam(query, name)
  if (value === undefined) return undefined
  if (value === 'true') return true
  if (value === 'false') return false
  throw apiErrors.invalid(`Invalid boolean value: '${value}'.`, name)
}

function integerParam (query: Query, name: string, min: number, max: number, fallback: number): number {
  const value = textParam(query, name)
  if (value === undefined) return fallback
  const parsed = Number(value)
  if (!Number.isInteger(parsed) || parsed < min) throw apiErrors.invalid(`Invalid value '${value}'. Values must be within the range: [${min}, ${max}]`, name)
  // "The page size can never be larger than" the maximum: larger requests get the maximum.
  return Math.min(parsed, max)
}

function timeParam (query: Query, name: string): number | undefined {
  const value = textParam(query, name)
  if (value === undefined) return undefined
  const parsed = Date.parse(value)
  if (!RFC3339.test(value) || Number.isNaN(parsed)) throw apiErrors.badRequest('Bad Request', name)
  return parsed
}

function requireScope (request: FastifyRequest, allowed: string[]): Authenticated {
  const auth = request.google
  if (auth === undefined) throw apiErrors.loginRequired()
  if (!auth.scopes.some((scope) => allowed.includes(scope))) throw apiErrors.insufficientPermissions()
  return auth
}

function ifMatch (request: FastifyRequest, event: StoredEvent): void {
  const expected = request.headers['if-match']
  if (expected === undefined) return
  const tags = expected.split(',').map((tag) => tag.trim())
  if (!tags.includes('*') && !tags.includes(etagOf(event))) throw apiErrors.conditionNotMet()
}

export async function calendarRoutes (app: FastifyInstance, options: { state: GoogleState }): Promise<void> {
  const { state } = options
  const { identity, calendars, channels } = state

  // Every call needs a bearer token (header, or `access_token` in the query as Google also takes).
  app.addHook('onRequest', async (request) => {
    const header = request.headers.authorization
    const token = header !== undefined && /^bearer /i.test(header)
      ? header.slice(7).trim()
      : textParam(queryOf(request), 'access_token') ?? textParam(queryOf(request), 'oauth_token')
    if (token === undefined || token === '') throw apiErrors.loginRequired()
    const auth = identity.authenticate(token)
    if (auth === undefined) throw apiErrors.invalidCredentials()
    request.google = auth
  })

  const calendarOf = (auth: Authenticated, calendarId: string): Calendar => {
    const calendar = calendars.resolve(auth.account.sub, calendarId)
    if (calendar === undefined) throw apiErrors.notFound()
    return calendar
  }

  /** The calendar a write names, refused whole when the account may only read it. */
  const writableCalendarOf = (auth: Authenticated, calendarId: string): Calendar => {
    const calendar = calendarOf(auth, calendarId)
    if (!canWrite(calendar.accessRole)) throw apiErrors.requiredAccessLevel()
    return calendar
  }

  const displayZone = (query: Query, calendar: Calendar): string => {
    const zone = textParam(query, 'timeZone')
    if (zone === undefined) return calendar.timeZone
    if (!isValidZone(zone)) throw apiErrors.invalid(`Invalid time zone: ${zone}`, 'timeZone')
    return zone
  }

  const render = (calendar: Calendar, event: StoredEvent, zone: string, minimalWhenCancelled = false): Record<string, unknown> =>
    renderEvent(event, { displayZone: zone, calendarId: calendar.id, origin: state.origin, ownerEmail: calendar.ownerEmail, minimalWhenCancelled })

  const listEntry = (calendar: Calendar): Record<string, unknown> => ({
    kind: 'calendar#calendarListEntry',
    etag: `"${calendar.updated * 1000 + (calendar.seq % 1000)}"`,
    id: calendar.id,
    summary: calendar.summary,
    ...(calendar.description === undefined ? {} : { description: calendar.description }),
    timeZone: calendar.timeZone,
    colorId: calendar.colorId,
    backgroundColor: calendar.backgroundColor,
    foregroundColor: calendar.foregroundColor,
    ...(calendar.selected ? { selected: true } : {}),
    accessRole: calendar.accessRole,
    defaultReminders: calendar.defaultReminders,
    ...(calendar.primary ? { primary: true } : {}),
    ...(calendar.hidden ? { hidden: true } : {}),
    conferenceProperties: { allowedConferenceSolutionTypes: ['hangoutsMeet'] }
  })

  app.get('/users/me/calendarList', { config: { operation: 'calendar.calendarList.list' } }, async (request) => {
    const auth = requireScope(request, READ_CALENDAR_LIST)
    const sub = auth.account.sub
    const query = queryOf(request)
    const maxResults = integerParam(query, 'maxResults', 1, MAX_CALENDAR_LIST_PAGE, DEFAULT_CALENDAR_LIST_PAGE)
    const syncToken = textParam(query, 'syncToken')
    const showHidden = booleanParam(query, 'showHidden')
    const showDeleted = booleanParam(query, 'showDeleted')
    const minAccessRole = textParam(query, 'minAccessRole')
    if (minAccessRole !== undefined && !(ACCESS_ROLES as readonly string[]).includes(minAccessRole)) {
      throw apiErrors.invalid(`Invalid value for: ${minAccessRole} is not a valid value`, 'minAccessRole')
    }
    const pageToken = textParam(query, 'pageToken')
    const page = pageToken === undefined ? undefined : decodeOpaque(pageToken)
    if (page !== undefined && (!Number.isInteger(page['o']) || !Number.isInteger(page['v']))) throw apiErrors.invalid('Invalid page token value.', 'pageToken')
    // The list's version when its first page was read: the sync token of its last page.
    const version = page === undefined ? calendars.listVersion(sub) : page['v'] as number
    let entries: Array<Record<string, unknown>>
    if (syncToken !== undefined) {
      // "All entries deleted and hidden since the previous list request will always be in the
      // result set and it is not allowed to set showDeleted neither showHidden to False."
      if (showHidden === false || showDeleted === false || query['minAccessRole'] !== undefined) throw apiErrors.syncTokenWithRestrictions()
      const token = decodeOpaque(syncToken)
      if (token?.['a'] !== sub || !Number.isInteger(token['v']) || (token['v'] as number) > calendars.listVersion(sub)) throw apiErrors.fullSyncRequired()
      const { changed, removed } = calendars.listChangesSince(sub, token['v'] as number)
      entries = [...changed.map(listEntry), ...removed.map(deletedEntry)]
    } else {
      entries = calendars.of(sub)
        .filter((calendar) => showHidden === true || !calendar.hidden)
        .filter((calendar) => minAccessRole === undefined || atLeast(calendar.accessRole, minAccessRole as AccessRole))
        .map(listEntry)
      if (showDeleted === true) entries.push(...calendars.removed(sub).map(deletedEntry))
    }
    const offset = page === undefined ? 0 : page['o'] as number
    const more = offset + maxResults < entries.length
    return {
      kind: 'calendar#calendarList',
      etag: `"${version}"`,
      ...(more
        ? { nextPageToken: encodeOpaque({ o: offset + maxResults, v: version }) }
        : { nextSyncToken: encodeOpaque({ a: sub, v: version }) }),
      items: entries.slice(offset, offset + maxResults)
    }
  })

  app.get('/users/me/calendarList/:calendarId', { config: { operation: 'calendar.calendarList.get' } }, async (request) => {
    const auth = requireScope(request, READ_CALENDAR_LIST)
    return listEntry(calendarOf(auth, paramsOf(request)['calendarId'] ?? ''))
  })

  app.get('/calendars/:calendarId', { config: { operation: 'calendar.calendars.get' } }, async (request) => {
    const auth = requireScope(request, READ_CALENDARS)
    const calendar = calendarOf(auth, paramsOf(request)['calendarId'] ?? '')
    return {
      kind: 'calendar#calendar',
      etag: `"${calendar.updated * 1000 + (calendar.seq % 1000)}"`,
      id: calendar.id,
      summary: calendar.summary,
      ...(calendar.description === undefined ? {} : { description: calendar.description }),
      timeZone: calendar.timeZone,
      conferenceProperties: { allowedConferenceSolutionTypes: ['hangoutsMeet'] }
    }
  })

  app.get('/calendars/:calendarId/events', { config: { operation: 'calendar.events.list' } }, async (request) => {
    const auth = requireScope(request, READ_EVENTS)
    const calendar = calendarOf(auth, paramsOf(request)['calendarId'] ?? '')
    const query = queryOf(request)
    const syncToken = textParam(query, 'syncToken')
    const showDeleted = booleanParam(query, 'showDeleted')
    if (syncToken !== undefined) {
      // "it is not allowed to set showDeleted to False" with a sync token, nor to filter.
      if (NOT_WITH_SYNC_TOKEN.some((name) => query[name] !== undefined) || showDeleted === false) throw apiErrors.syncTokenWithRestrictions()
    }
    if (booleanParam(query, 'singleEvents') === true) {
      throw apiErrors.badRequest('singleEvents=true is not served by this stand-in; series come whole (singleEvents=false).', 'singleEvents')
    }
    const orderBy = textParam(query, 'orderBy')
    if (orderBy === 'startTime') throw apiErrors.badRequest('The requested ordering is not available for the particular query.', 'orderBy')
    if (orderBy !== undefined && orderBy !== 'updated') throw apiErrors.invalid(`Invalid value for: ${orderBy} is not a valid value`, 'orderBy')
    const timeMin = timeParam(query, 'timeMin')
    const timeMax = timeParam(query, 'timeMax')
    if (timeMin !== undefined && timeMax !== undefined && timeMax <= timeMin) throw apiErrors.timeRangeEmpty('timeMax')
    const zone = displayZone(query, calendar)
    const listQuery: ListQuery = {
      maxResults: integerParam(query, 'maxResults', 1, MAX_EVENTS_PAGE, DEFAULT_EVENTS_PAGE),
      showDeleted: showDeleted ?? false
    }
    const optional: Partial<ListQuery> = {
      pageToken: textParam(query, 'pageToken'),
      syncToken,
      timeMin,
      timeMax,
      updatedMin: timeParam(query, 'updatedMin'),
      iCalUID: textParam(query, 'iCalUID'),
      q: textParam(query, 'q'),
      orderBy: orderBy === 'updated' ? 'updated' : undefined
    }
    for (const [name, value] of Object.entries(optional)) if (value !== undefined) Object.assign(listQuery, { [name]: value })
    const page = calendars.list(calendar, listQuery)
    return {
      kind: 'calendar#events',
      etag: `"${calendar.updated * 1000 + (calendar.seq % 1000)}"`,
      summary: calendar.summary,
      ...(calendar.description === undefined ? {} : { description: calendar.description }),
      updated: new Date(calendar.updated).toISOString(),
      timeZone: calendar.timeZone,
      accessRole: calendar.accessRole,
      defaultReminders: calendar.defaultReminders,
      ...(page.nextPageToken === undefined ? {} : { nextPageToken: page.nextPageToken }),
      ...(page.nextSyncToken === undefined ? {} : { nextSyncToken: page.nextSyncToken }),
      items: page.items.map((event) => render(calendar, event, zone, page.incremental))
    }
  })

  app.post('/calendars/:calendarId/events', { config: { operation: 'calendar.events.insert' } }, async (request) => {
    const auth = requireScope(request, WRITE_EVENTS)
    const calendar = writableCalendarOf(auth, paramsOf(request)['calendarId'] ?? '')
    const event = calendars.insert(calendar, readEventWrite(request.body, calendar.timeZone), auth.account.email)
    return render(calendar, event, calendar.timeZone)
  })

  const findEvent = (calendar: Calendar, eventId: string): StoredEvent => {
    const event = calendars.find(calendar, eventId)
    if (event === undefined) throw apiErrors.notFound()
    return event
  }

  app.get('/calendars/:calendarId/events/:eventId', { config: { operation: 'calendar.events.get' } }, async (request, reply) => {
    const auth = requireScope(request, READ_EVENTS)
    const params = paramsOf(request)
    const calendar = calendarOf(auth, params['calendarId'] ?? '')
    const event = findEvent(calendar, params['eventId'] ?? '')
    const etag = etagOf(event)
    const ifNoneMatch = request.headers['if-none-match']
    if (ifNoneMatch !== undefined && ifNoneMatch.split(',').map((tag) => tag.trim()).includes(etag)) {
      return reply.code(304).header('etag', etag).send()
    }
    return reply.header('etag', etag).send(render(calendar, event, displayZone(queryOf(request), calendar)))
  })

  const modify = (mode: 'patch' | 'update') => async (request: FastifyRequest) => {
    const auth = requireScope(request, WRITE_EVENTS)
    const params = paramsOf(request)
    const calendar = writableCalendarOf(auth, params['calendarId'] ?? '')
    const current = findEvent(calendar, params['eventId'] ?? '')
    ifMatch(request, current)
    const event = calendars.modify(calendar, current, readEventWrite(request.body, calendar.timeZone), mode)
    return render(calendar, event, calendar.timeZone)
  }
  app.patch('/calendars/:calendarId/events/:eventId', { config: { operation: 'calendar.events.patch' } }, modify('patch'))
  app.put('/calendars/:calendarId/events/:eventId', { config: { operation: 'calendar.events.update' } }, modify('update'))

  app.delete('/calendars/:calendarId/events/:eventId', { config: { operation: 'calendar.events.delete' } }, async (request, reply) => {
    const auth = requireScope(request, WRITE_EVENTS)
    const params = paramsOf(request)
    const calendar = writableCalendarOf(auth, params['calendarId'] ?? '')
    const current = findEvent(calendar, params['eventId'] ?? '')
    ifMatch(request, current)
    calendars.cancel(calendar, current)
    return reply.code(204).send()
  })

  app.post('/calendars/:calendarId/events/watch', { config: { operation: 'calendar.events.watch' } }, async (request) => {
    const auth = requireScope(request, READ_EVENTS)
    const requestedId = paramsOf(request)['calendarId'] ?? ''
    const calendar = calendarOf(auth, requestedId)
    const watch = readWatchRequest(request.body)
    const channel = channels.open(watch, {
      calendarId: calendar.id,
      ownerSub: auth.account.sub,
      resourceId: calendar.resourceId,
      resourceUri: `${state.origin}/calendar/v3/calendars/${encodeURIComponent(requestedId)}/events?alt=json`
    })
    return {
      kind: 'api#channel',
      id: channel.id,
      resourceId: channel.resourceId,
      resourceUri: channel.resourceUri,
      ...(channel.token === undefined ? {} : { token: channel.token }),
      expiration: String(channel.expiration)
    }
  })

  app.post('/channels/stop', { config: { operation: 'calendar.channels.stop' } }, async (request, reply) => {
    const auth = requireScope(request, ANY_CALENDAR)
    const body = (typeof request.body === 'object' && request.body !== null ? request.body : {}) as Record<string, unknown>
    const id = typeof body['id'] === 'string' ? body['id'] : undefined
    const resourceId = typeof body['resourceId'] === 'string' ? body['resourceId'] : undefined
    if (id === undefined) throw apiErrors.required('Required', 'id')
    if (resourceId === undefined) throw apiErrors.required('Required', 'resourceId')
    if (!channels.stop(id, resourceId, auth.account.sub)) {
      throw new ApiError(404, 'notFound', `Channel '${id}' not found for project '0'`)
    }
    return reply.code(204).send()
  })
}
