// Change-notification subscriptions and the delivery of their notifications, as Graph's
// "Receive change notifications through webhooks" and lifecycle-notification guides describe:
// the notification URL (and the lifecycle URL) must echo a validation token before a
// subscription exists; notifications are POSTed as `{ value: [...] }` and must be acknowledged
// with a 2xx within 3 seconds, else they are retried and finally dropped (and reported `missed`).
import { Agent, request } from 'undici'
import type { FastifyBaseLogger } from 'fastify'
import type { ChangeType } from './calendars.js'
import { graphErrors } from './errors.js'
import { newGuid } from './secrets.js'
import { parseInstant } from './zones.js'

export type LifecycleEvent = 'reauthorizationRequired' | 'subscriptionRemoved' | 'missed'

export interface SubscriptionRequest {
  changeType: string
  changeTypes: Set<ChangeType>
  notificationUrl: string
  lifecycleNotificationUrl?: string
  resource: string
  expiration: number
  clientState?: string
  latestSupportedTlsVersion: string
}

/** What a subscription watches, resolved from its `resource`. */
export interface Watched {
  ownerOid: string
  /** The calendars whose events it watches. */
  calendarIds: Set<string>
}

export interface Subscription extends SubscriptionRequest, Watched {
  id: string
  clientId: string
  tenantId: string
  userGraphId: string
  createdAt: number
  state: 'active' | 'deleted' | 'removed'
  reauthorizationRequired: boolean
  delivered: number
  failed: number
}

export interface DeliveryOptions {
  /** Graph waits 3 seconds for the 2xx of a notification. */
  timeoutMs: number
  /** Graph waits 10 seconds for the validation answer. */
  validationTimeoutMs: number
  /** Graph retries for up to 4 hours; the stand-in retries this many times, with doubling delays. */
  retries: number
  retryBaseDelayMs: number
  /** Notifications of one subscription waiting together go out in one POST, this many at most. */
  batchSize: number
}

export interface DeliveryCounts {
  /** Notification items acknowledged (change and lifecycle). */
  delivered: number
  lifecycle: number
  /** Items given up on: refused, unreachable, or too slow after every retry. */
  failed: number
  /** Subscription attempts whose validation failed. */
  validationsFailed: number
}

/** Outlook message, event and contact subscriptions last at most 10,080 minutes (under 7 days). */
const MAX_LIFETIME_MINUTES = 10_080
const CHANGE_TYPES = new Set<string>(['created', 'updated', 'deleted'])
const TLS_VERSIONS = new Set(['v1_0', 'v1_1', 'v1_2', 'v1_3'])
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]'])

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** DateTimeOffset as Graph writes them here, with seven fractional digits: `2024-05-01T09:00:00.0000000Z`. */
export const dateTimeOffset = (ms: number): string => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$10000Z')

function checkUrl (value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw graphErrors.subscriptionRequest(`${name} is required.`)
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw graphErrors.subscriptionRequest(`Invalid ${name}: '${value}'.`)
  }
  // Graph takes HTTPS endpoints only. A development machine has plain HTTP on loopback, which the
  // stand-in takes too; any other HTTP address gets the refusal Graph gives.
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    throw graphErrors.subscriptionRequest(`The ${name} must be an HTTPS URL: '${value}'.`)
  }
  return value
}

function checkExpiration (value: unknown, now: number): number {
  if (typeof value !== 'string') throw graphErrors.subscriptionRequest('expirationDateTime is required.')
  const ms = parseInstant(value)
  if (ms === undefined) throw graphErrors.subscriptionRequest(`Invalid expirationDateTime: '${value}'.`)
  if (ms <= now) throw graphErrors.subscriptionRequest('Subscription expiration must be in the future.')
  if (ms > now + MAX_LIFETIME_MINUTES * 60_000) {
    throw graphErrors.subscriptionRequest(`Subscription expiration can only be ${MAX_LIFETIME_MINUTES} minutes in the future.`)
  }
  return ms
}

/** Reads a POST /subscriptions body; throws Graph's 400s. */
export function readSubscriptionRequest (body: unknown, now: number): SubscriptionRequest {
  if (!isRecord(body)) throw graphErrors.badBody()
  const changeType = body['changeType']
  if (typeof changeType !== 'string' || changeType === '') throw graphErrors.subscriptionRequest('changeType is required.')
  const changeTypes = new Set(changeType.split(',').map((item) => item.trim()))
  for (const item of changeTypes) {
    if (!CHANGE_TYPES.has(item)) throw graphErrors.subscriptionRequest(`Invalid changeType '${item}': use created, updated, deleted or a comma-separated list of them.`)
  }
  const resource = body['resource']
  if (typeof resource !== 'string' || resource === '') throw graphErrors.subscriptionRequest('resource is required.')
  const clientState = body['clientState']
  if (clientState !== undefined && clientState !== null && (typeof clientState !== 'string' || clientState.length > 128)) {
    throw graphErrors.subscriptionRequest('clientState must be a string of at most 128 characters.')
  }
  if (body['includeResourceData'] === true) {
    throw graphErrors.subscriptionRequest('includeResourceData is not served by this stand-in: notifications carry the item id, not its content.')
  }
  const tls = body['latestSupportedTlsVersion'] ?? 'v1_2'
  if (typeof tls !== 'string' || !TLS_VERSIONS.has(tls)) throw graphErrors.subscriptionRequest(`Invalid latestSupportedTlsVersion '${String(tls)}'.`)
  const read: SubscriptionRequest = {
    changeType: [...changeTypes].join(','),
    changeTypes: changeTypes as Set<ChangeType>,
    notificationUrl: checkUrl(body['notificationUrl'], 'notificationUrl'),
    resource,
    expiration: checkExpiration(body['expirationDateTime'], now),
    latestSupportedTlsVersion: tls
  }
  if (typeof clientState === 'string') read.clientState = clientState
  if (body['lifecycleNotificationUrl'] !== undefined && body['lifecycleNotificationUrl'] !== null) {
    read.lifecycleNotificationUrl = checkUrl(body['lifecycleNotificationUrl'], 'lifecycleNotificationUrl')
  }
  return read
}

/** Reads a PATCH /subscriptions/{id} body: a new expiration, and optionally a new notification URL. */
export function readSubscriptionUpdate (body: unknown, now: number): { expiration?: number, notificationUrl?: string } {
  if (!isRecord(body)) throw graphErrors.badBody()
  for (const key of Object.keys(body)) {
    if (key !== 'expirationDateTime' && key !== 'notificationUrl') {
      throw graphErrors.subscriptionRequest(`Only expirationDateTime and notificationUrl of a subscription can be updated, not '${key}'.`)
    }
  }
  const update: { expiration?: number, notificationUrl?: string } = {}
  if (body['expirationDateTime'] !== undefined) update.expiration = checkExpiration(body['expirationDateTime'], now)
  if (body['notificationUrl'] !== undefined) update.notificationUrl = checkUrl(body['notificationUrl'], 'notificationUrl')
  return update
}

/** The subscription as Graph answers it. */
export function renderSubscription (subscription: Subscription, origin: string): Record<string, unknown> {
  return {
    '@odata.context': `${origin}/v1.0/$metadata#subscriptions/$entity`,
    id: subscription.id,
    resource: subscription.resource,
    applicationId: subscription.clientId,
    changeType: subscription.changeType,
    clientState: subscription.clientState ?? null,
    notificationUrl: subscription.notificationUrl,
    notificationQueryOptions: null,
    lifecycleNotificationUrl: subscription.lifecycleNotificationUrl ?? null,
    expirationDateTime: dateTimeOffset(subscription.expiration),
    creatorId: subscription.ownerOid,
    includeResourceData: false,
    latestSupportedTlsVersion: subscription.latestSupportedTlsVersion,
    encryptionCertificate: null,
    encryptionCertificateId: null,
    notificationUrlAppId: null
  }
}

interface Outbox {
  url: string
  items: Array<Record<string, unknown>>
  /** Resolves when the outbox is empty and nothing is in flight. */
  draining: Promise<void> | undefined
}

export class Subscriptions {
  private readonly subscriptions = new Map<string, Subscription>()
  private readonly outboxes = new Map<string, Outbox>()
  private readonly agent = new Agent({ connections: 32 })
  private readonly inFlight = new Set<AbortController>()
  private closed = false
  readonly counts: DeliveryCounts = { delivered: 0, lifecycle: 0, failed: 0, validationsFailed: 0 }

  constructor (
    private readonly now: () => number,
    private readonly log: FastifyBaseLogger,
    private readonly delivery: DeliveryOptions
  ) {}

  /** Validates the endpoints (the handshake), then creates the subscription. */
  async create (input: SubscriptionRequest, owner: { clientId: string, tenantId: string, userGraphId: string }, watched: Watched): Promise<Subscription> {
    await this.handshake(input.notificationUrl)
    if (input.lifecycleNotificationUrl !== undefined) await this.handshake(input.lifecycleNotificationUrl)
    const subscription: Subscription = {
      ...input,
      ...watched,
      id: newGuid(),
      clientId: owner.clientId,
      tenantId: owner.tenantId,
      userGraphId: owner.userGraphId,
      createdAt: this.now(),
      state: 'active',
      reauthorizationRequired: false,
      delivered: 0,
      failed: 0
    }
    this.subscriptions.set(subscription.id, subscription)
    return subscription
  }

  /** A live subscription of the application for the user; expired ones are gone, as in Graph. */
  find (id: string, clientId: string, ownerOid: string): Subscription | undefined {
    const subscription = this.subscriptions.get(id)
    if (subscription === undefined || !this.isActive(subscription)) return undefined
    return subscription.clientId === clientId && subscription.ownerOid === ownerOid ? subscription : undefined
  }

  listFor (clientId: string, ownerOid: string): Subscription[] {
    return this.list().filter((subscription) => subscription.clientId === clientId && subscription.ownerOid === ownerOid && this.isActive(subscription))
  }

  list (): Subscription[] {
    return [...this.subscriptions.values()]
  }

  get (id: string): Subscription | undefined {
    return this.subscriptions.get(id)
  }

  async update (subscription: Subscription, update: { expiration?: number, notificationUrl?: string }): Promise<Subscription> {
    if (update.notificationUrl !== undefined && update.notificationUrl !== subscription.notificationUrl) await this.handshake(update.notificationUrl)
    if (update.notificationUrl !== undefined) subscription.notificationUrl = update.notificationUrl
    if (update.expiration !== undefined) subscription.expiration = update.expiration
    // Renewing a subscription also reauthorizes it.
    subscription.reauthorizationRequired = false
    return subscription
  }

  delete (subscription: Subscription): void {
    subscription.state = 'deleted'
  }

  /** Queues change notifications for every live subscription watching the calendar. */
  notify (calendarId: string, changes: Array<{ changeType: ChangeType, eventId: string, changeKey: string }>, paused: (subscription: Subscription) => boolean): void {
    for (const subscription of this.subscriptions.values()) {
      if (!subscription.calendarIds.has(calendarId) || !this.isActive(subscription) || paused(subscription)) continue
      for (const change of changes) {
        if (!subscription.changeTypes.has(change.changeType)) continue
        const path = `Users/${subscription.userGraphId}/Events/${change.eventId}`
        this.enqueue(subscription, subscription.notificationUrl, {
          subscriptionId: subscription.id,
          subscriptionExpirationDateTime: dateTimeOffset(subscription.expiration),
          changeType: change.changeType,
          resource: path,
          resourceData: { '@odata.type': '#Microsoft.Graph.Event', '@odata.id': path, '@odata.etag': `W/"${change.changeKey}"`, id: change.eventId },
          clientState: subscription.clientState ?? null,
          tenantId: subscription.tenantId
        }, 'change')
      }
    }
  }

  /**
   * Sends a lifecycle notification. Subscriptions without a lifecycle URL get none (as in Graph);
   * `subscriptionRemoved` also ends the subscription. Answers whether one was queued.
   */
  lifecycle (subscription: Subscription, event: LifecycleEvent): boolean {
    if (event === 'reauthorizationRequired') subscription.reauthorizationRequired = true
    if (event === 'subscriptionRemoved') subscription.state = 'removed'
    if (subscription.lifecycleNotificationUrl === undefined) return false
    this.enqueue(subscription, subscription.lifecycleNotificationUrl, {
      subscriptionId: subscription.id,
      subscriptionExpirationDateTime: dateTimeOffset(subscription.expiration),
      tenantId: subscription.tenantId,
      clientState: subscription.clientState ?? null,
      lifecycleEvent: event
    }, 'lifecycle')
    return true
  }

  isActive (subscription: Subscription): boolean {
    return subscription.state === 'active' && subscription.expiration > this.now()
  }

  /** Forgets subscriptions that expired or were deleted, once nothing waits to be sent for them. */
  sweep (): void {
    for (const [id, subscription] of this.subscriptions) {
      if (!this.isActive(subscription) && ![...this.outboxes.keys()].some((key) => key.startsWith(`${id}|`))) this.subscriptions.delete(id)
    }
  }

  /** Resolves once every notification queued so far was delivered or given up. */
  async settled (): Promise<void> {
    for (;;) {
      const draining = [...this.outboxes.values()].map((outbox) => outbox.draining).filter((promise): promise is Promise<void> => promise !== undefined)
      if (draining.length === 0) return
      await Promise.all(draining)
    }
  }

  async close (): Promise<void> {
    this.closed = true
    for (const controller of this.inFlight) controller.abort()
    await this.settled()
    await this.agent.close()
  }

  /** The validation handshake: the endpoint must echo the token as text/plain with 200, in time. */
  private async handshake (url: string): Promise<void> {
    const token = `Validation: Testing client application reachability for subscription Request-Id: ${newGuid()}`
    const target = new URL(url)
    target.searchParams.append('validationToken', token)
    const outcome = await this.post(target.toString(), '', 'text/plain; charset=utf-8', this.delivery.validationTimeoutMs)
    if (outcome.status === 200 && outcome.contentType.toLowerCase().startsWith('text/plain') && outcome.body === token) return
    this.counts.validationsFailed++
    this.log.warn({ host: target.host, status: outcome.status }, 'subscription validation failed')
    if (outcome.status !== 200) {
      const reason = outcome.status === undefined ? (outcome.error ?? 'no answer') : `HTTP status code '${outcome.status}'`
      throw graphErrors.subscriptionRequest(`Subscription validation request failed. Notification endpoint must respond with 200 OK to validation request. (${reason})`)
    }
    if (!outcome.contentType.toLowerCase().startsWith('text/plain')) {
      throw graphErrors.subscriptionRequest('Subscription validation request failed. Response must have a content type of text/plain.')
    }
    throw graphErrors.subscriptionRequest('Subscription validation request failed. Response must exactly match validationToken query parameter.')
  }

  private enqueue (subscription: Subscription, url: string, item: Record<string, unknown>, kind: 'change' | 'lifecycle'): void {
    const key = `${subscription.id}|${kind}`
    let outbox = this.outboxes.get(key)
    if (outbox === undefined || outbox.url !== url) {
      outbox = { url, items: [], draining: undefined }
      this.outboxes.set(key, outbox)
    }
    outbox.items.push(item)
    if (outbox.draining === undefined) {
      const current = outbox
      current.draining = new Promise<void>((resolve) => setImmediate(resolve))
        .then(async () => await this.drain(subscription, current, kind))
        .finally(() => {
          current.draining = undefined
          if (this.outboxes.get(key) === current && current.items.length === 0) this.outboxes.delete(key)
        })
    }
  }

  private async drain (subscription: Subscription, outbox: Outbox, kind: 'change' | 'lifecycle'): Promise<void> {
    while (outbox.items.length > 0) {
      const batch = outbox.items.splice(0, this.delivery.batchSize)
      const delivered = await this.deliver(outbox.url, JSON.stringify({ value: batch }), subscription.id)
      if (delivered) {
        subscription.delivered += batch.length
        this.counts.delivered += batch.length
        if (kind === 'lifecycle') this.counts.lifecycle += batch.length
        continue
      }
      subscription.failed += batch.length
      this.counts.failed += batch.length
      // Notifications Graph could not deliver are announced as `missed` (lifecycle guide).
      if (kind === 'change' && !this.closed) this.lifecycle(subscription, 'missed')
    }
  }

  private async deliver (url: string, body: string, subscriptionId: string): Promise<boolean> {
    for (let attempt = 0; attempt <= this.delivery.retries; attempt++) {
      if (this.closed) return false
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, this.delivery.retryBaseDelayMs * 2 ** (attempt - 1)))
      const outcome = await this.post(url, body, 'application/json; charset=utf-8', this.delivery.timeoutMs)
      if (outcome.status !== undefined && outcome.status >= 200 && outcome.status < 300) return true
      this.log.warn({ subscriptionId, host: new URL(url).host, status: outcome.status, err: outcome.error }, 'change notification not acknowledged')
    }
    this.log.warn({ subscriptionId, host: new URL(url).host }, 'change notification dropped after retries')
    return false
  }

  private async post (url: string, body: string, contentType: string, timeoutMs: number): Promise<{ status?: number, body?: string, contentType: string, error?: string }> {
    const controller = new AbortController()
    this.inFlight.add(controller)
    const timer = setTimeout(() => controller.abort(), timeoutMs)
    try {
      const response = await request(url, { method: 'POST', headers: { 'content-type': contentType }, body, dispatcher: this.agent, signal: controller.signal })
      const text = await response.body.text()
      const type = response.headers['content-type']
      return { status: response.statusCode, body: text, contentType: typeof type === 'string' ? type : '' }
    } catch (err) {
      return { contentType: '', error: controller.signal.aborted ? `no answer within ${timeoutMs} ms` : (err as Error).message }
    } finally {
      clearTimeout(timer)
      this.inFlight.delete(controller)
    }
  }
}
