// The Microsoft Graph v1.0 subset under `/v1.0`, as on graph.microsoft.com: the signed-in user,
// mailbox settings, calendars, events (list, create, get, update, delete, instances), calendar views and their
// delta query, change-notification subscriptions, and JSON batching of all of these.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { batchRoutes } from './batch.js'
import type { Calendar, DeltaItem, DeltaPosition, Target } from './calendars.js'
import { GraphError, graphErrors } from './errors.js'
import { readEventWrite, removedItem, renderInstance } from './events.js'
import type { EventResource, Instance, RenderOptions } from './events.js'
import { graphPermissions } from './identity.js'
import type { Account } from './identity.js'
import { newGuid, parseItemId } from './secrets.js'
import type { MicrosoftState } from './state.js'
import { readSubscriptionRequest, readSubscriptionUpdate, renderSubscription } from './subscriptions.js'
import type { Subscription, Watched } from './subscriptions.js'
import { ianaZone, parseInstant } from './zones.js'
import { decodeOpaque, encodeOpaque } from '../stand-in/opaque.js'

interface GraphCaller {
  account: Account
  clientId: string
  permissions: Set<string>
}

declare module 'fastify' {
  interface FastifyRequest {
    graph?: GraphCaller
    graphRequestId?: string
  }
}

const READ_USER = ['User.Read', 'User.ReadWrite', 'User.ReadBasic.All', 'User.Read.All']
const READ_CALENDARS = ['Calendars.Read', 'Calendars.ReadBasic', 'Calendars.ReadWrite', 'Calendars.Read.Shared', 'Calendars.ReadWrite.Shared']
const WRITE_CALENDARS = ['Calendars.ReadWrite', 'Calendars.ReadWrite.Shared']
const READ_MAILBOX_SETTINGS = ['MailboxSettings.Read', 'MailboxSettings.ReadWrite']
const DEFAULT_PAGE = 10
const MAX_PAGE = 1000
const UNSUPPORTED_OPTIONS = ['$filter', '$search', '$expand', '$count']

type Query = Record<string, string>

/** Query parameters with case-insensitive names, as OData reads them; repeated ones keep the first. */
function queryOf (request: FastifyRequest): Query {
  const query: Query = {}
  for (const [name, value] of Object.entries((request.query ?? {}) as Record<string, unknown>)) {
    const first = Array.isArray(value) ? value[0] : value
    if (typeof first === 'string' && query[name.toLowerCase()] === undefined) query[name.toLowerCase()] = first
  }
  return query
}

const paramsOf = (request: FastifyRequest): Record<string, string> => (request.params ?? {}) as Record<string, string>
const pathOf = (request: FastifyRequest): string => request.url.split('?', 1)[0] ?? ''

interface Preferences {
  zone: string
  zoneName: string
  /** The zone name actually honoured, for Preference-Applied. */
  appliedZone?: string
  maxPageSize?: number
}

/** `Prefer: outlook.timezone="..."` and `Prefer: odata.maxpagesize=N` (one header or several). */
function preferences (request: FastifyRequest): Preferences {
  const raw = request.headers.prefer
  const header = Array.isArray(raw) ? raw.join(',') : (raw ?? '')
  const result: Preferences = { zone: 'Etc/UTC', zoneName: 'UTC' }
  const zoneMatch = /outlook\.timezone\s*=\s*"([^"]*)"/i.exec(header)
  if (zoneMatch?.[1] !== undefined) {
    const zone = ianaZone(zoneMatch[1])
    if (zone !== undefined) Object.assign(result, { zone, zoneName: zoneMatch[1], appliedZone: zoneMatch[1] })
  }
  const pageMatch = /odata\.maxpagesize\s*=\s*(\d+)/i.exec(header)
  if (pageMatch?.[1] !== undefined) result.maxPageSize = Math.max(1, Math.min(MAX_PAGE, Number(pageMatch[1])))
  return result
}

function requirePermission (request: FastifyRequest, allowed: string[]): GraphCaller {
  const caller = request.graph
  if (caller === undefined) throw graphErrors.noToken()
  if (!allowed.some((permission) => caller.permissions.has(permission))) throw graphErrors.accessDenied()
  return caller
}

function rejectUnsupported (query: Query, also: string[] = []): void {
  for (const option of [...UNSUPPORTED_OPTIONS, ...also]) {
    if (query[option] !== undefined) throw graphErrors.notSupported(`The query option '${option}' is not served by this stand-in.`)
  }
}

function windowOf (query: Query): { from: number, to: number } {
  const startText = query['startdatetime']
  const endText = query['enddatetime']
  if (startText === undefined || endText === undefined) {
    throw graphErrors.invalidParameter('This request requires a time window specified by the query string parameters StartDateTime and EndDateTime.')
  }
  const from = parseInstant(startText)
  const to = parseInstant(endText)
  if (from === undefined) throw graphErrors.invalidParameter(`The value '${startText}' of parameter 'StartDateTime' is invalid.`)
  if (to === undefined) throw graphErrors.invalidParameter(`The value '${endText}' of parameter 'EndDateTime' is invalid.`)
  if (to <= from) throw graphErrors.invalidParameter('The parameter EndDateTime must be later than StartDateTime.')
  return { from, to }
}

function wholeNumber (query: Query, name: string, min: number, max: number): number | undefined {
  const value = query[name]
  if (value === undefined) return undefined
  const parsed = Number(value)
  if (!Number.isInteger(parsed) || parsed < min || parsed > max) throw graphErrors.notSupported(`Invalid value '${value}' for query option '${name}'.`)
  return parsed
}

/** An If-Match header against the current change key (`W/"key"`, `"key"` or `*`); 412 on mismatch. */
function checkIfMatch (request: FastifyRequest, changeKey: string): void {
  const header = request.headers['if-match']
  if (header === undefined) return
  const tags = header.split(',').map((tag) => tag.trim())
  const fits = tags.some((tag) => tag === '*' || tag === `W/"${changeKey}"` || tag === `"${changeKey}"` || tag === changeKey)
  if (!fits) throw graphErrors.conflict()
}

/** What a delta token (or skip token) carries: calendar, window, epoch, and the round's position. */
interface DeltaState {
  c: string
  f: number
  t: number
  ep: string
  /** Changes after this number are the round's (absent on a first round). */
  s?: number
  /** The round's snapshot: the calendar's change number when the round began. */
  u: number
  e: number
  i: number
}

function readDeltaState (token: string): DeltaState | undefined {
  const value = decodeOpaque(token)
  if (value === undefined) return undefined
  const numbers = ['f', 't', 'u', 'e', 'i'].every((name) => Number.isInteger(value[name]))
  if (!numbers || typeof value['c'] !== 'string' || typeof value['ep'] !== 'string') return undefined
  if (value['s'] !== undefined && !Number.isInteger(value['s'])) return undefined
  return value as unknown as DeltaState
}

export async function graphRoutes (app: FastifyInstance, options: { state: MicrosoftState }): Promise<void> {
  const { state } = options
  const { identity, calendars, subscriptions } = state

  app.addHook('onRequest', async (request) => {
    const header = request.headers.authorization
    const token = header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : undefined
    if (token === undefined || token === '') throw graphErrors.noToken()
    const auth = identity.authenticate(token)
    if (!auth.ok) throw auth.reason === 'expired' ? graphErrors.expiredToken() : graphErrors.badToken()
    request.graph = { account: auth.account, clientId: auth.clientId, permissions: new Set(graphPermissions(auth.scopes)) }
  })

  const renderOptions = (calendar: Calendar, prefs: Preferences, withType = false): RenderOptions => ({
    origin: state.origin,
    zone: prefs.zone,
    zoneName: prefs.zoneName,
    organizer: { name: calendar.ownerName, address: calendar.ownerEmail },
    withType
  })

  const applyPreferences = (reply: FastifyReply, prefs: Preferences, pageSize?: number): void => {
    const applied: string[] = []
    if (prefs.appliedZone !== undefined) applied.push(`outlook.timezone="${prefs.appliedZone}"`)
    if (pageSize !== undefined && prefs.maxPageSize !== undefined) applied.push(`odata.maxpagesize=${pageSize}`)
    if (applied.length > 0) reply.header('preference-applied', applied.join(','))
  }

  const metadata = (account: Account, tail: string): string => `${state.origin}/v1.0/$metadata#users('${account.graphId}')/${tail}`

  /** The calendar a path names: `calendars/{id}`, or the default one for `/me/calendar` and `/me/events`. */
  const calendarOf = (request: FastifyRequest, caller: GraphCaller): Calendar => {
    const id = paramsOf(request)['calendarId']
    if (id === undefined) {
      const calendar = calendars.defaultOf(caller.account.oid)
      if (calendar === undefined) throw graphErrors.notFound()
      return calendar
    }
    if (parseItemId(id) === undefined) throw graphErrors.malformedId()
    const calendar = calendars.get(id)
    if (calendar === undefined || calendar.ownerOid !== caller.account.oid) throw graphErrors.notFound()
    return calendar
  }

  /** The event a path names: within its calendar, or for `/me/events/{id}` wherever it lives. */
  const targetOf = (request: FastifyRequest, caller: GraphCaller): { calendar: Calendar, target: Target } => {
    const params = paramsOf(request)
    const eventId = params['eventId'] ?? ''
    if (parseItemId(eventId) === undefined) throw graphErrors.malformedId()
    let calendar: Calendar | undefined
    if (params['calendarId'] !== undefined || pathOf(request).startsWith('/v1.0/me/calendar/')) {
      calendar = calendarOf(request, caller)
    } else {
      calendar = calendars.calendarOfEvent(eventId)
      if (calendar?.ownerOid !== caller.account.oid) calendar = undefined
    }
    const target = calendar === undefined ? undefined : calendars.resolve(calendar, eventId)
    if (calendar === undefined || target === undefined) throw graphErrors.notFound()
    return { calendar, target }
  }

  const writable = (calendar: Calendar): void => {
    if (!calendar.canEdit) throw graphErrors.accessDenied()
  }

  /** A page of a list (`$top`/`$skip`, or Prefer odata.maxpagesize) with its nextLink. */
  const page = <T>(request: FastifyRequest, reply: FastifyReply, items: T[], prefs: Preferences): { value: T[], nextLink?: string } => {
    const query = queryOf(request)
    const top = wholeNumber(query, '$top', 1, MAX_PAGE)
    const skip = wholeNumber(query, '$skip', 0, Number.MAX_SAFE_INTEGER) ?? 0
    const size = top ?? prefs.maxPageSize ?? DEFAULT_PAGE
    applyPreferences(reply, prefs, size)
    const value = items.slice(skip, skip + size)
    if (skip + size >= items.length) return { value }
    const params = new URLSearchParams()
    for (const [name, text] of Object.entries((request.query ?? {}) as Record<string, unknown>)) {
      if (name.toLowerCase() !== '$skip' && typeof text === 'string') params.set(name, text)
    }
    params.set('$skip', String(skip + size))
    return { value, nextLink: `${state.origin}${pathOf(request)}?${params.toString().replace(/%24/g, '$')}` }
  }

  app.get('/me', { config: { operation: 'user.get' } }, async (request) => {
    const { account } = requirePermission(request, READ_USER)
    return {
      '@odata.context': `${state.origin}/v1.0/$metadata#users/$entity`,
      businessPhones: [],
      displayName: account.name,
      givenName: account.givenName,
      jobTitle: null,
      mail: account.email,
      mobilePhone: null,
      officeLocation: null,
      preferredLanguage: 'en-US',
      surname: account.surname === '' ? null : account.surname,
      userPrincipalName: account.email,
      id: account.graphId
    }
  })

  // Outlook's settings of the mailbox (Get user mailbox settings): the zone is the one the account
  // was created with, in the format it is kept in (Windows by default); the rest are Outlook's defaults.
  const mailboxSettings = (account: Account): Record<string, unknown> => ({
    automaticRepliesSetting: {
      status: 'disabled',
      externalAudience: 'all',
      scheduledStartDateTime: { dateTime: '0001-01-01T00:00:00.0000000', timeZone: 'UTC' },
      scheduledEndDateTime: { dateTime: '0001-01-01T00:00:00.0000000', timeZone: 'UTC' },
      internalReplyMessage: '',
      externalReplyMessage: ''
    },
    timeZone: account.timeZone,
    language: { locale: 'en-US', displayName: 'English (United States)' },
    workingHours: {
      daysOfWeek: ['monday', 'tuesday', 'wednesday', 'thursday', 'friday'],
      startTime: '08:00:00.0000000',
      endTime: '17:00:00.0000000',
      timeZone: { name: account.timeZone }
    },
    userPurpose: { value: 'user' },
    dateFormat: 'MM/dd/yyyy',
    timeFormat: 'hh:mm tt',
    delegateMeetingMessageDeliveryOptions: 'sendToDelegateOnly'
  })

  app.get('/me/mailboxSettings', { config: { operation: 'mailboxSettings.get' } }, async (request) => {
    const { account } = requirePermission(request, READ_MAILBOX_SETTINGS)
    return { '@odata.context': `${state.origin}/v1.0/$metadata#Me/mailboxSettings`, ...mailboxSettings(account) }
  })

  app.get('/me/mailboxSettings/:setting', { config: { operation: 'mailboxSettings.get' } }, async (request) => {
    const { account } = requirePermission(request, READ_MAILBOX_SETTINGS)
    const requested = paramsOf(request)['setting'] ?? ''
    const settings = mailboxSettings(account)
    const name = Object.keys(settings).find((key) => key.toLowerCase() === requested.toLowerCase())
    if (name === undefined) throw graphErrors.unknownSegment(requested)
    const value = settings[name]
    const context = `${state.origin}/v1.0/$metadata#users('${account.graphId}')/mailboxSettings/${name}`
    // A setting that is a string is answered as OData's `value`; an object as its properties.
    return typeof value === 'string' ? { '@odata.context': context, value } : { '@odata.context': context, ...(value as Record<string, unknown>) }
  })

  const renderCalendar = (calendar: Calendar): Record<string, unknown> => ({
    id: calendar.id,
    name: calendar.name,
    color: calendar.color,
    hexColor: calendar.hexColor,
    isDefaultCalendar: calendar.isDefault,
    changeKey: calendar.changeKey,
    canShare: calendar.canEdit,
    canViewPrivateItems: true,
    canEdit: calendar.canEdit,
    allowedOnlineMeetingProviders: [],
    defaultOnlineMeetingProvider: 'none',
    isTallyingResponses: calendar.canEdit,
    isRemovable: !calendar.isDefault,
    owner: { name: calendar.ownerName, address: calendar.ownerEmail }
  })

  app.get('/me/calendars', { config: { operation: 'calendar.list' } }, async (request, reply) => {
    const caller = requirePermission(request, READ_CALENDARS)
    rejectUnsupported(queryOf(request))
    const listed = page(request, reply, calendars.of(caller.account.oid).map(renderCalendar), preferences(request))
    return {
      '@odata.context': metadata(caller.account, 'calendars'),
      value: listed.value,
      ...(listed.nextLink === undefined ? {} : { '@odata.nextLink': listed.nextLink })
    }
  })

  const getCalendar = async (request: FastifyRequest): Promise<Record<string, unknown>> => {
    const caller = requirePermission(request, READ_CALENDARS)
    return { '@odata.context': `${metadata(caller.account, 'calendars')}/$entity`, ...renderCalendar(calendarOf(request, caller)) }
  }
  app.get('/me/calendar', { config: { operation: 'calendar.get' } }, getCalendar)
  app.get('/me/calendars/:calendarId', { config: { operation: 'calendar.get' } }, getCalendar)

  for (const prefix of ['/me/events', '/me/calendar/events', '/me/calendars/:calendarId/events']) {
    app.get(prefix, { config: { operation: 'event.list' } }, async (request, reply) => {
      const caller = requirePermission(request, READ_CALENDARS)
      rejectUnsupported(queryOf(request), ['$orderby'])
      const calendar = calendarOf(request, caller)
      const prefs = preferences(request)
      const options = renderOptions(calendar, prefs)
      const listed = page(request, reply, calendars.items(calendar), prefs)
      return {
        '@odata.context': metadata(caller.account, `calendars('${calendar.id}')/events`),
        value: listed.value.map((event) => renderInstance(calendars.instanceOf({ kind: 'item', event }), options)),
        ...(listed.nextLink === undefined ? {} : { '@odata.nextLink': listed.nextLink })
      }
    })

    app.post(prefix, { config: { operation: 'event.create' } }, async (request, reply) => {
      const caller = requirePermission(request, WRITE_CALENDARS)
      const calendar = calendarOf(request, caller)
      writable(calendar)
      const write = readEventWrite(request.body, caller.account.timeZone)
      const event = calendars.insert(calendar, write, caller.clientId)
      const prefs = preferences(request)
      applyPreferences(reply, prefs)
      return reply.code(201).send({
        '@odata.context': `${metadata(caller.account, `calendars('${calendar.id}')/events`)}/$entity`,
        ...renderInstance(calendars.instanceOf({ kind: 'item', event }), renderOptions(calendar, prefs))
      })
    })
  }

  const answerInstance = (reply: FastifyReply, caller: GraphCaller, calendar: Calendar, instance: Instance, prefs: Preferences): FastifyReply => {
    applyPreferences(reply, prefs)
    return reply.send({
      '@odata.context': `${metadata(caller.account, `calendars('${calendar.id}')/events`)}/$entity`,
      ...renderInstance(instance, renderOptions(calendar, prefs))
    })
  }

  for (const prefix of ['/me/events/:eventId', '/me/calendar/events/:eventId', '/me/calendars/:calendarId/events/:eventId']) {
    app.get(prefix, { config: { operation: 'event.get' } }, async (request, reply) => {
      const caller = requirePermission(request, READ_CALENDARS)
      const { calendar, target } = targetOf(request, caller)
      return answerInstance(reply, caller, calendar, calendars.instanceOf(target), preferences(request))
    })

    app.patch(prefix, { config: { operation: 'event.update' } }, async (request, reply) => {
      const caller = requirePermission(request, WRITE_CALENDARS)
      const { calendar, target } = targetOf(request, caller)
      writable(calendar)
      checkIfMatch(request, calendars.instanceOf(target).changeKey)
      const zoneName = target.kind === 'item' ? target.event.content.start.zoneName : target.master.content.start.zoneName
      const instance = calendars.update(calendar, target, readEventWrite(request.body, zoneName), caller.clientId)
      return answerInstance(reply, caller, calendar, instance, preferences(request))
    })

    app.delete(prefix, { config: { operation: 'event.delete' } }, async (request, reply) => {
      const caller = requirePermission(request, WRITE_CALENDARS)
      const { calendar, target } = targetOf(request, caller)
      writable(calendar)
      checkIfMatch(request, calendars.instanceOf(target).changeKey)
      calendars.remove(calendar, target, caller.clientId)
      return reply.code(204).send()
    })

    app.get(`${prefix}/instances`, { config: { operation: 'event.instances' } }, async (request, reply) => {
      const caller = requirePermission(request, READ_CALENDARS)
      const query = queryOf(request)
      rejectUnsupported(query, ['$orderby'])
      const window = windowOf(query)
      const { calendar, target } = targetOf(request, caller)
      if (target.kind !== 'item' || target.event.recurrence === undefined) {
        throw graphErrors.invalidRequest('The instances of an event can be listed for a series master only.')
      }
      const prefs = preferences(request)
      const options = renderOptions(calendar, prefs)
      const listed = page(request, reply, calendars.seriesInstances(target.event, window.from, window.to), prefs)
      return {
        '@odata.context': metadata(caller.account, `calendars('${calendar.id}')/events('${target.event.id}')/instances`),
        value: listed.value.map((instance) => renderInstance(instance, options)),
        ...(listed.nextLink === undefined ? {} : { '@odata.nextLink': listed.nextLink })
      }
    })
  }

  for (const prefix of ['/me/calendarView', '/me/calendar/calendarView', '/me/calendars/:calendarId/calendarView']) {
    app.get(prefix, { config: { operation: 'calendarView.list' } }, async (request, reply) => {
      const caller = requirePermission(request, READ_CALENDARS)
      const query = queryOf(request)
      rejectUnsupported(query)
      const order = query['$orderby']
      if (order !== undefined && !/^start\/dateTime( asc)?$/i.test(order)) throw graphErrors.notSupported(`Ordering by '${order}' is not served by this stand-in.`)
      const window = windowOf(query)
      const calendar = calendarOf(request, caller)
      const prefs = preferences(request)
      const options = renderOptions(calendar, prefs)
      const listed = page(request, reply, calendars.view(calendar, window.from, window.to), prefs)
      return {
        '@odata.context': metadata(caller.account, `calendars('${calendar.id}')/calendarView`),
        value: listed.value.map((instance) => renderInstance(instance, options)),
        ...(listed.nextLink === undefined ? {} : { '@odata.nextLink': listed.nextLink })
      }
    })

    app.get(`${prefix}/delta`, { config: { operation: 'calendarView.delta' } }, async (request, reply) => {
      const caller = requirePermission(request, READ_CALENDARS)
      const query = queryOf(request)
      rejectUnsupported(query, ['$select', '$orderby'])
      const calendar = calendarOf(request, caller)
      const base = `${state.origin}${pathOf(request)}`
      const prefs = preferences(request)
      const skipToken = query['$skiptoken']
      const deltaToken = query['$deltatoken']
      let current: DeltaState
      if (skipToken !== undefined || deltaToken !== undefined) {
        const token = readDeltaState(skipToken ?? deltaToken ?? '')
        if (token === undefined || token.c !== calendar.id || token.ep !== calendar.epoch || (token.s ?? 0) > calendar.seq) {
          // A token the calendar no longer knows: the client must start over with a first round.
          if (token !== undefined) {
            reply.header('location', `${base}?startDateTime=${new Date(token.f).toISOString()}&endDateTime=${new Date(token.t).toISOString()}`)
          }
          throw graphErrors.syncStateNotFound()
        }
        // A delta token begins the next round: changes after its number, up to now.
        current = deltaToken !== undefined && skipToken === undefined ? { ...token, s: token.u, u: calendar.seq, e: 0, i: 0 } : token
      } else {
        const window = windowOf(query)
        current = { c: calendar.id, f: window.from, t: window.to, ep: calendar.epoch, u: calendar.seq, e: 0, i: 0 }
      }
      const pageSize = prefs.maxPageSize ?? DEFAULT_PAGE
      const position: DeltaPosition = { event: current.e, item: current.i }
      const result = calendars.deltaPage(calendar, { from: current.f, to: current.t }, current.s, current.u, position, pageSize)
      applyPreferences(reply, prefs, pageSize)
      const options = renderOptions(calendar, prefs, true)
      const value = result.items.map((item: DeltaItem): EventResource => 'removed' in item ? removedItem(item.removed) : renderInstance(item.instance, options))
      const link = result.next === undefined
        ? { '@odata.deltaLink': `${base}?$deltatoken=${encodeOpaque({ c: calendar.id, f: current.f, t: current.t, ep: calendar.epoch, u: current.u, e: 0, i: 0 })}` }
        : { '@odata.nextLink': `${base}?$skiptoken=${encodeOpaque({ ...current, e: result.next.event, i: result.next.item })}` }
      return { '@odata.context': `${state.origin}/v1.0/$metadata#Collection(event)`, ...link, value }
    })
  }

  /** What a subscription's `resource` names: the user's events, or one calendar's. */
  const watchedBy = (resource: string, caller: GraphCaller): Watched => {
    const path = resource.replace(/^\/+/, '').replace(/\('([^']*)'\)/g, '/$1')
    const segments = path.split('/')
    const [head, user, ...rest] = segments
    let tail: string[]
    if (head?.toLowerCase() === 'me') {
      tail = [user ?? '', ...rest]
    } else if (head?.toLowerCase() === 'users' && user !== undefined) {
      const { account } = caller
      const self = [account.graphId, account.oid, account.email].some((name) => name.toLowerCase() === user.toLowerCase())
      if (!self) throw graphErrors.subscriptionForbidden()
      tail = rest
    } else {
      throw graphErrors.subscriptionRequest(`Unsupported resource '${resource}': the stand-in serves subscriptions to events (me/events, me/calendars/{id}/events).`)
    }
    const lower = tail.map((segment) => segment.toLowerCase())
    let calendar: Calendar | undefined
    if (lower.length === 1 && lower[0] === 'events') calendar = calendars.defaultOf(caller.account.oid)
    else if (lower.length === 2 && lower[0] === 'calendar' && lower[1] === 'events') calendar = calendars.defaultOf(caller.account.oid)
    else if (lower.length === 3 && lower[0] === 'calendars' && lower[2] === 'events') {
      const found = calendars.get(tail[1] ?? '')
      if (found === undefined || found.ownerOid !== caller.account.oid) throw graphErrors.subscriptionRequest(`Resource '${resource}' not found.`)
      calendar = found
    } else {
      throw graphErrors.subscriptionRequest(`Unsupported resource '${resource}': the stand-in serves subscriptions to events (me/events, me/calendars/{id}/events).`)
    }
    if (calendar === undefined) throw graphErrors.subscriptionRequest(`Resource '${resource}' not found.`)
    return { ownerOid: caller.account.oid, calendarIds: new Set([calendar.id]) }
  }

  const subscriptionOf = (request: FastifyRequest, caller: GraphCaller): Subscription => {
    const id = paramsOf(request)['subscriptionId'] ?? ''
    const subscription = subscriptions.find(id, caller.clientId, caller.account.oid)
    if (subscription === undefined) throw graphErrors.subscriptionNotFound(id)
    return subscription
  }

  const authorized = (caller: GraphCaller): void => {
    if (!READ_CALENDARS.some((permission) => caller.permissions.has(permission)) || !identity.hasGrant(caller.clientId, caller.account.oid)) {
      throw graphErrors.subscriptionForbidden()
    }
  }

  app.post('/subscriptions', { config: { operation: 'subscription.create' } }, async (request, reply) => {
    const caller = request.graph
    if (caller === undefined) throw graphErrors.noToken()
    const input = readSubscriptionRequest(request.body, state.now())
    authorized(caller)
    const watched = watchedBy(input.resource, caller)
    const subscription = await subscriptions.create(input, { clientId: caller.clientId, tenantId: caller.account.tid, userGraphId: caller.account.graphId }, watched)
    return reply.code(201).send(renderSubscription(subscription, state.origin))
  })

  app.get('/subscriptions', { config: { operation: 'subscription.list' } }, async (request) => {
    const caller = request.graph
    if (caller === undefined) throw graphErrors.noToken()
    return {
      '@odata.context': `${state.origin}/v1.0/$metadata#subscriptions`,
      value: subscriptions.listFor(caller.clientId, caller.account.oid).map((subscription) => {
        const { '@odata.context': _context, ...rest } = renderSubscription(subscription, state.origin)
        return rest
      })
    }
  })

  app.get('/subscriptions/:subscriptionId', { config: { operation: 'subscription.get' } }, async (request) => {
    const caller = request.graph
    if (caller === undefined) throw graphErrors.noToken()
    return renderSubscription(subscriptionOf(request, caller), state.origin)
  })

  app.patch('/subscriptions/:subscriptionId', { config: { operation: 'subscription.update' } }, async (request) => {
    const caller = request.graph
    if (caller === undefined) throw graphErrors.noToken()
    const subscription = subscriptionOf(request, caller)
    const update = readSubscriptionUpdate(request.body, state.now())
    authorized(caller)
    return renderSubscription(await subscriptions.update(subscription, update), state.origin)
  })

  app.delete('/subscriptions/:subscriptionId', { config: { operation: 'subscription.delete' } }, async (request, reply) => {
    const caller = request.graph
    if (caller === undefined) throw graphErrors.noToken()
    subscriptions.delete(subscriptionOf(request, caller))
    return reply.code(204).send()
  })

  app.post('/subscriptions/:subscriptionId/reauthorize', { config: { operation: 'subscription.reauthorize' } }, async (request, reply) => {
    const caller = request.graph
    if (caller === undefined) throw graphErrors.noToken()
    const subscription = subscriptionOf(request, caller)
    authorized(caller)
    subscription.reauthorizationRequired = false
    return reply.code(204).send()
  })

  // Inside this plugin so the batch itself needs the bearer token like every Graph call.
  await app.register(batchRoutes)
}

/** Request ids on every Graph answer, echoing the client's own when it sent one. */
export function graphRequestIds (request: FastifyRequest, reply: FastifyReply): { requestId: string, clientRequestId: string } {
  const requestId = request.graphRequestId ?? newGuid()
  request.graphRequestId = requestId
  const sent = request.headers['client-request-id']
  const clientRequestId = typeof sent === 'string' && sent !== '' ? sent : requestId
  reply.header('request-id', requestId).header('client-request-id', clientRequestId)
  return { requestId, clientRequestId }
}

export function sendGraphError (request: FastifyRequest, reply: FastifyReply, error: GraphError, origin: string): FastifyReply {
  const { requestId, clientRequestId } = graphRequestIds(request, reply)
  if (error.statusCode === 401) {
    reply.header('www-authenticate', `Bearer realm="", authorization_uri="${origin}/common/oauth2/authorize", client_id="00000003-0000-0000-c000-000000000000"`)
  }
  return reply.code(error.statusCode).type('application/json').send(error.body(requestId, clientRequestId, new Date()))
}
