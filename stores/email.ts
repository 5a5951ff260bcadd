// The email block's collections: one row per user and step of the welcome sequence (claimed with
// leases, so any number of processes can send), the recipients who asked for no more mail or
// whose address bounced, and the vendor webhooks already applied.
import { randomUUID } from 'node:crypto'
import type { Collection, Db } from 'mongodb'
import { EMAIL_SEND_STATES, type EmailSendState, type EmailStepKey } from '../lib/email-sequence.js'
import { insertOnce, isDuplicateKeyError } from './database.js'
import { leaseIsFree, leaseTo, NO_LEASE } from '../lib/leases.js'

const EMAIL_SENDS_COLLECTION = 'emailSends'
const EMAIL_RECIPIENTS_COLLECTION = 'emailRecipients'
const EMAIL_WEBHOOKS_COLLECTION = 'emailWebhookEvents'

/** How long a process's claim on a row lasts: a process that dies mid-send gives the row back this soon. */
export const EMAIL_LEASE_MS = 120_000
/** A webhook id is remembered this long; the vendor's retries of one event end well within it. */
const WEBHOOK_MEMORY_SECONDS = 7 * 24 * 60 * 60

export interface EmailSendDocument {
  _id: string
  userId: string
  step: EmailStepKey
  /** When the step is due (stays put: staleness is measured from it). */
  dueAt: Date
  /** When the poller may next take the row (the due time, then the backoff after a failure). */
  nextAttemptAt: Date
  state: EmailSendState
  attempts: number
  /** Which claim holds the row (each claim has an id of its own), and until when: lib/leases.ts. */
  leaseOwner?: string | null
  leaseUntil: Date | null
  enrolledAt: Date
  /** Why a row was held, skipped, canceled, went stale or failed. */
  reason?: string
  sentAt?: Date
  vendorMessageId?: string
  deliveredAt?: Date
  bouncedAt?: Date
  complainedAt?: Date
}

export interface EmailRecipientDocument {
  _id: string
  suppressedAt: Date
  reason: 'unsubscribed' | 'bounced' | 'complained'
}

export interface WebhookEventDocument {
  _id: string
  type: string
  receivedAt: Date
}

type DeliveryMark = 'deliveredAt' | 'bouncedAt' | 'complainedAt'

export class EmailStore {
  readonly #sends: Collection<EmailSendDocument>
  readonly #recipients: Collection<EmailRecipientDocument>
  readonly #webhooks: Collection<WebhookEventDocument>

  constructor (db: Db) {
    this.#sends = db.collection<EmailSendDocument>(EMAIL_SENDS_COLLECTION)
    this.#recipients = db.collection<EmailRecipientDocument>(EMAIL_RECIPIENTS_COLLECTION)
    this.#webhooks = db.collection<WebhookEventDocument>(EMAIL_WEBHOOKS_COLLECTION)
  }

  async ensureIndexes (): Promise<void> {
    await this.#sends.createIndexes([
      { key: { state: 1, nextAttemptAt: 1 }, name: 'due' },
      { key: { userId: 1, state: 1 }, name: 'by_user' },
      { key: { vendorMessageId: 1 }, name: 'by_vendor_id', sparse: true }
    ])
    await this.#webhooks.createIndex({ receivedAt: 1 }, { name: 'forget_after', expireAfterSeconds: WEBHOOK_MEMORY_SECONDS })
  }

  /** Writes a user's rows; rows already there (an earlier attempt, another process's sweep) stay as they are. */
  async enroll (rows: EmailSendDocument[]): Promise<void> {
    try {
      await this.#sends.insertMany(rows, { ordered: false })
    } catch (error) {
      const writeErrors = (error as { writeErrors?: Array<{ code?: number }> }).writeErrors
      const onlyDuplicates = isDuplicateKeyError(error) || (Array.isArray(writeErrors) && writeErrors.every((item) => item.code === 11000))
      if (!onlyDuplicates) throw error
    }
  }

  /**
   * Suppresses the recipient and cancels their pending mail. The first reason stays: a complaint
   * after an unsubscribe does not rewrite history. `first`: this call suppressed them.
   */
  async suppress (userId: string, reason: EmailRecipientDocument['reason'], at: Date): Promise<{ first: boolean, canceled: number }> {
    const result = await this.#recipients.updateOne({ _id: userId }, { $setOnInsert: { suppressedAt: at, reason } }, { upsert: true })
    const canceled = await this.#sends.updateMany({ userId, state: 'queued' }, { $set: { state: 'canceled', reason, ...NO_LEASE } })
    return { first: result.upsertedCount === 1, canceled: canceled.modifiedCount }
  }

  async isSuppressed (userId: string): Promise<boolean> {
    return await this.#recipients.findOne({ _id: userId }) !== null
  }

  /** Claims the row due first that no live lease holds, for EMAIL_LEASE_MS. */
  async claimDue (at: Date): Promise<EmailSendDocument | null> {
    return await this.#sends.findOneAndUpdate(
      { state: 'queued', nextAttemptAt: { $lte: at }, ...leaseIsFree(at) },
      { $set: leaseTo(randomUUID(), at, EMAIL_LEASE_MS) },
      { sort: { nextAttemptAt: 1 }, returnDocument: 'after' }
    )
  }

  /** Writes the outcome of a claim, as long as the claim is still this process's and (unless told otherwise) the row still queued. */
  async settle (row: EmailSendDocument, update: Record<string, unknown>, stillQueued = true): Promise<void> {
    await this.#sends.updateOne({ _id: row._id, leaseOwner: row.leaseOwner, ...(stillQueued ? { state: 'queued' } : {}) }, { $set: { ...update, ...NO_LEASE } })
  }

  async queueDepth (): Promise<number> {
    return await this.#sends.countDocuments({ state: 'queued' })
  }

  /** Sends by state, each counted on the `due` index (state first). */
  async countsByState (): Promise<Map<EmailSendState, number>> {
    const counts = await Promise.all(EMAIL_SEND_STATES.map(async (state) => [state, await this.#sends.countDocuments({ state })] as const))
    return new Map(counts)
  }

  async byVendorId (vendorMessageId: string): Promise<EmailSendDocument | null> {
    return await this.#sends.findOne({ vendorMessageId })
  }

  async byId (id: string): Promise<EmailSendDocument | null> {
    return await this.#sends.findOne({ _id: id })
  }

  /** Notes what the vendor reported of a mail; a delivery is noted once. */
  async mark (id: string, field: DeliveryMark, at: Date): Promise<void> {
    await this.#sends.updateOne(field === 'deliveredAt' ? { _id: id, deliveredAt: { $exists: false } } : { _id: id }, { $set: { [field]: at } })
  }

  /** Remembers a webhook as applied; false when it already was. */
  async rememberWebhook (id: string, type: string, at: Date): Promise<boolean> {
    return await insertOnce(this.#webhooks, { _id: id, type, receivedAt: at })
  }

  /** Forgets a webhook whose application failed, so that the vendor's retry applies it. */
  async forgetWebhook (id: string): Promise<void> {
    await this.#webhooks.deleteOne({ _id: id })
  }
}
