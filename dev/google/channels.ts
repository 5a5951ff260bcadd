// Notification channels (events.watch, channels.stop) and the delivery of push notifications, as
// the Calendar API's "Push notifications" guide describes them: a `sync` message when the channel
// opens, then one message per change of the watched collection, each a POST with an empty body
// and the X-Goog-* headers, until the channel is stopped or expires.
import { Agent, request } from 'undici'
import type { FastifyBaseLogger } from 'fastify'
import { ApiError, apiErrors } from './errors.js'

export type ResourceState = 'sync' | 'exists' | 'not_exists'

export interface Channel {
  id: string
  resourceId: string
  resourceUri: string
  calendarId: string
  ownerSub: string
  address: string
  token?: string
  /** Milliseconds since the epoch. */
  expiration: number
  params: Record<string, string>
  createdAt: number
  state: 'active' | 'stopped' | 'expired' | 'resource-gone'
  messageNumber: number
  delivered: number
  failed: number
  /** Messages of one channel go out one after another, in order, the `sync` message first. */
  queue: Promise<void>
  pending: number
}

export interface WatchRequest {
  id: string
  address: string
  token?: string
  expiration?: number
  ttlSec?: number
}

export interface DeliveryOptions {
  /** Retries after a 500, 502, 503 or 504 or a network failure (Google retries these with backoff). */
  retries: number
  retryBaseDelayMs: number
  timeoutMs: number
}

export interface DeliveryCounts {
  sync: number
  exists: number
  not_exists: number
  /** Given up: refused by the receiver, unreachable, or still failing after the retries. */
  failed: number
  /** Not sent because the channel was stopped or expired while the message waited. */
  skipped: number
}

/** events.watch's documented default time-to-live: 604800 seconds (one week). */
const DEFAULT_CHANNEL_TTL_SEC = 604800
const SUCCESS = new Set([102, 200, 201, 202, 204])
const RETRIED = new Set([500, 502, 503, 504])
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]'])
const USER_AGENT = 'APIs-Google; (+https://developers.google.com/webmasters/APIs-Google.html)'
const CHANNEL_ID = /^[A-Za-z0-9\-_+/=]{1,64}$/

/** Reads an events.watch body; throws Google's 400s. */
export function readWatchRequest (body: unknown): WatchRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw apiErrors.parseError()
  const fields = body as Record<string, unknown>
  const { id, type, address, token, expiration, params } = fields
  if (typeof id !== 'string' || id === '') throw apiErrors.required('Required', 'id')
  if (!CHANNEL_ID.test(id)) throw apiErrors.invalid(`Invalid channel id: ${id}`, 'id')
  if (type !== 'web_hook' && type !== 'webhook') throw apiErrors.invalid('Invalid value for: type', 'type')
  if (typeof address !== 'string' || address === '') throw apiErrors.required('Required', 'address')
  let url: URL
  try {
    url = new URL(address)
  } catch {
    throw apiErrors.invalid(`Invalid notification address: ${address}`, 'address')
  }
  // Google accepts HTTPS addresses only. Plain HTTP is allowed here for loopback receivers, which
  // is all a development machine has; anything else gets Google's refusal.
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    throw new ApiError(400, 'push.webhookUrlNotHttps', `WebHook callback must be HTTPS: ${address}`, 'global')
  }
  const watch: WatchRequest = { id, address }
  if (token !== undefined && token !== null) {
    if (typeof token !== 'string' || token.length > 256) throw apiErrors.invalid('Invalid value for: token', 'token')
    watch.token = token
  }
  if (expiration !== undefined && expiration !== null) {
    const value = Number(expiration)
    if (!Number.isInteger(value) || value <= 0) throw apiErrors.invalid('Invalid value for: expiration', 'expiration')
    watch.expiration = value
  }
  if (params !== undefined && params !== null) {
    if (typeof params !== 'object' || Array.isArray(params)) throw apiErrors.invalid('Invalid value for: params', 'params')
    const ttl = (params as Record<string, unknown>)['ttl']
    if (ttl !== undefined) {
      const seconds = Number(ttl)
      if (!Number.isInteger(seconds) || seconds <= 0) throw apiErrors.invalid('Invalid value for: params.ttl', 'params.ttl')
      watch.ttlSec = seconds
    }
  }
  return watch
}

export class Channels {
  private readonly channels = new Map<string, Channel>()
  private readonly agent = new Agent({ connections: 32 })
  private readonly inFlight = new Set<AbortController>()
  private closed = false
  readonly counts: DeliveryCounts = { sync: 0, exists: 0, not_exists: 0, failed: 0, skipped: 0 }

  constructor (
    private readonly now: () => number,
    private readonly log: FastifyBaseLogger,
    private readonly delivery: DeliveryOptions
  ) {}

  /** Opens a channel on one calendar's events and sends its `sync` message. */
  open (watch: WatchRequest, target: { calendarId: string, ownerSub: string, resourceId: string, resourceUri: string }): Channel {
    const existing = this.channels.get(watch.id)
    if (existing !== undefined && this.isActive(existing)) {
      throw new ApiError(400, 'channelIdNotUnique', `Channel id ${watch.id} not unique`)
    }
    const now = this.now()
    const ttlExpiry = now + (watch.ttlSec ?? DEFAULT_CHANNEL_TTL_SEC) * 1000
    const expiration = watch.expiration !== undefined && watch.ttlSec === undefined
      ? watch.expiration
      : Math.min(ttlExpiry, watch.expiration ?? Infinity)
    const channel: Channel = {
      id: watch.id,
      resourceId: target.resourceId,
      resourceUri: target.resourceUri,
      calendarId: target.calendarId,
      ownerSub: target.ownerSub,
      address: watch.address,
      expiration,
      params: watch.ttlSec === undefined ? {} : { ttl: String(watch.ttlSec) },
      createdAt: now,
      state: 'active',
      messageNumber: 0,
      delivered: 0,
      failed: 0,
      queue: Promise.resolve(),
      pending: 0,
      ...(watch.token === undefined ? {} : { token: watch.token })
    }
    this.channels.set(channel.id, channel)
    this.send(channel, 'sync')
    return channel
  }

  /** channels.stop: only the account that opened the channel can stop it. */
  stop (id: string, resourceId: string, sub: string): boolean {
    const channel = this.channels.get(id)
    if (channel === undefined || channel.resourceId !== resourceId || channel.ownerSub !== sub || channel.state !== 'active') return false
    channel.state = 'stopped'
    return true
  }

  /** A change of the calendar: every live channel watching it gets a message. */
  notify (calendarId: string, state: 'exists' | 'not_exists'): void {
    for (const channel of this.channels.values()) {
      if (channel.calendarId !== calendarId || !this.isActive(channel)) continue
      this.send(channel, state)
      if (state === 'not_exists') channel.state = 'resource-gone'
    }
  }

  list (): Channel[] {
    for (const channel of this.channels.values()) this.isActive(channel)
    return [...this.channels.values()]
  }

  /** Resolves once every message queued so far has been delivered or given up. */
  async settled (): Promise<void> {
    await Promise.all([...this.channels.values()].map(async (channel) => await channel.queue))
  }

  async close (): Promise<void> {
    this.closed = true
    for (const controller of this.inFlight) controller.abort()
    await this.settled()
    await this.agent.close()
  }

  private isActive (channel: Channel): boolean {
    if (channel.state === 'active' && channel.expiration <= this.now()) channel.state = 'expired'
    return channel.state === 'active'
  }

  private send (channel: Channel, state: ResourceState): void {
    // Message numbers grow with every message but are not consecutive (the guide says as much),
    // so a receiver must not read a gap as a lost message.
    channel.messageNumber = state === 'sync' ? 1 : channel.messageNumber + 1 + Math.floor(Math.random() * 3)
    const headers: Record<string, string> = {
      'user-agent': USER_AGENT,
      'x-goog-channel-id': channel.id,
      'x-goog-channel-expiration': new Date(channel.expiration).toUTCString(),
      'x-goog-resource-id': channel.resourceId,
      'x-goog-resource-uri': channel.resourceUri,
      'x-goog-resource-state': state,
      'x-goog-message-number': String(channel.messageNumber)
    }
    if (channel.token !== undefined) headers['x-goog-channel-token'] = channel.token
    channel.pending++
    channel.queue = channel.queue.then(async () => {
      try {
        const outcome = await this.deliver(channel, headers)
        if (outcome === 'delivered') {
          channel.delivered++
          this.counts[state]++
        } else if (outcome === 'failed') {
          channel.failed++
          this.counts.failed++
        } else {
          this.counts.skipped++
        }
      } finally {
        channel.pending--
      }
    })
  }

  private async deliver (channel: Channel, headers: Record<string, string>): Promise<'delivered' | 'failed' | 'skipped'> {
    for (let attempt = 0; attempt <= this.delivery.retries; attempt++) {
      // A channel stopped or expired while its message waited gets nothing more; one whose
      // calendar went away still gets the messages queued before, `not_exists` last.
      if (this.closed || (!this.isActive(channel) && channel.state !== 'resource-gone')) return 'skipped'
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, this.delivery.retryBaseDelayMs * 2 ** (attempt - 1)))
      const controller = new AbortController()
      this.inFlight.add(controller)
      const timer = setTimeout(() => controller.abort(), this.delivery.timeoutMs)
      let status: number | undefined
      try {
        const response = await request(channel.address, { method: 'POST', headers, body: '', dispatcher: this.agent, signal: controller.signal })
        status = response.statusCode
        await response.body.dump()
      } catch (err) {
        this.log.warn({ channelId: channel.id, host: new URL(channel.address).host, err: (err as Error).message }, 'push notification not delivered')
      } finally {
        clearTimeout(timer)
        this.inFlight.delete(controller)
      }
      if (status !== undefined && SUCCESS.has(status)) return 'delivered'
      if (status !== undefined && !RETRIED.has(status)) {
        this.log.warn({ channelId: channel.id, host: new URL(channel.address).host, status }, 'push notification refused by the receiver; dropped')
        return 'failed'
      }
    }
    this.log.warn({ channelId: channel.id, host: new URL(channel.address).host }, 'push notification dropped after retries')
    return 'failed'
  }
}
