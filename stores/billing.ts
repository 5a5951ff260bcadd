// Billing's three collections: each user's billing record, the Stripe events already applied
// (kept past Stripe's three days of retries, then expired), and the trials claimed per proven
// identity (one trial per verified email and provider account).
import { ObjectId, type Collection, type Db } from 'mongodb'
import type { BillingRecord } from '../lib/billing.js'
import type { VendorSubscription } from '../lib/billing-vendor.js'
import { insertOnce, isDuplicateKeyError } from './database.js'

export interface BillingDocument extends BillingRecord {
  _id: ObjectId
  createdAt: Date
  updatedAt: Date
  /**
   * The ticket of the subscription snapshot stored (`snapshotTicket`): a snapshot whose fetch began
   * earlier changes nothing, however its event is dated.
   */
  snapshotTicket?: number
}

/** One trial claimed by a proven identity (lib/billing.ts trialClaimIds): whose it was, when it ends. */
export interface TrialClaim {
  _id: string
  userId: string
  trialEndsAt: Date
  claimedAt: Date
}

interface Counter {
  _id: string
  value: number
}

interface ProcessedEvent {
  _id: string
  type: string
  created: number
  receivedAt: Date
}

/** Stripe retries a delivery for up to three days; ids are kept well beyond that. */
const PROCESSED_EVENT_TTL_SECONDS = 30 * 24 * 60 * 60

/** The fields of a billing record that mirror the subscription as Stripe holds it. */
function subscriptionFields (subscription: VendorSubscription) {
  return {
    customerId: subscription.customerId,
    subscriptionId: subscription.id,
    subscriptionStatus: subscription.status,
    subscriptionTrialEnd: subscription.trialEnd,
    currentPeriodEnd: subscription.currentPeriodEnd,
    cancelAtPeriodEnd: subscription.cancelAtPeriodEnd
  }
}

export class BillingStore {
  readonly #records: Collection<BillingDocument>
  readonly #events: Collection<ProcessedEvent>
  readonly #claims: Collection<TrialClaim>
  readonly #counters: Collection<Counter>

  constructor (db: Db) {
    this.#records = db.collection<BillingDocument>('billing')
    this.#events = db.collection<ProcessedEvent>('billingEvents')
    this.#claims = db.collection<TrialClaim>('trialClaims')
    this.#counters = db.collection<Counter>('billingCounters')
  }

  async ensureIndexes (): Promise<void> {
    await this.#records.createIndexes([{ key: { customerId: 1 }, name: 'billing_customer', sparse: true }])
    await this.#events.createIndexes([{ key: { receivedAt: 1 }, name: 'billing_event_expiry', expireAfterSeconds: PROCESSED_EVENT_TTL_SECONDS }])
  }

  /**
   * The user's record, written first as `trial` when there is none. The trial record is one
   * insert of a whole document: it exists complete or not at all.
   */
  async recordOrTrial (userId: string, trial: BillingRecord): Promise<BillingDocument | null> {
    const _id = new ObjectId(userId)
    const now = new Date()
    try {
      await this.#records.updateOne({ _id }, { $setOnInsert: { ...trial, createdAt: now, updatedAt: now } }, { upsert: true })
    } catch (error) {
      // Two first visits at once: the other one wrote it.
      if (!isDuplicateKeyError(error)) throw error
    }
    return await this.#records.findOne({ _id })
  }

  /** Sets the user's Stripe customer unless one was set meanwhile. */
  async setCustomer (userId: string, customerId: string): Promise<void> {
    await this.#records.updateOne({ _id: new ObjectId(userId), customerId: { $exists: false } }, { $set: { customerId, updatedAt: new Date() } })
  }

  async userOfCustomer (customerId: string): Promise<string | undefined> {
    const owner = await this.#records.findOne({ customerId }, { projection: { _id: 1 } })
    return owner?._id.toHexString()
  }

  /**
   * A number taken before Stripe's state is read, from one counter every backend process shares:
   * a read begun later holds a larger one. Stripe dates its events in whole seconds and delivers
   * them in no set order, so neither an event's date nor its arrival says which read is newer.
   */
  async snapshotTicket (): Promise<number> {
    const next = async () => await this.#counters.findOneAndUpdate({ _id: 'subscriptionSnapshot' }, { $inc: { value: 1 } }, { upsert: true, returnDocument: 'after' })
    // The first two tickets ever taken at once: the other one created the counter.
    const counter = await next().catch(async (error: unknown) => { if (isDuplicateKeyError(error)) return await next(); throw error })
    if (counter === null) throw new Error('the subscription snapshot counter was not written')
    return counter.value
  }

  /**
   * Mirrors the subscription as read after `ticket` was taken, unless a read begun later was stored
   * first; true when stored.
   */
  async applySubscription (userId: string, subscription: VendorSubscription, ticket: number, extra: { paymentFailed?: boolean } = {}): Promise<boolean> {
    const applied = await this.#records.updateOne(
      { _id: new ObjectId(userId), $or: [{ snapshotTicket: { $exists: false } }, { snapshotTicket: { $lt: ticket } }] },
      { $set: { ...subscriptionFields(subscription), ...extra, snapshotTicket: ticket, updatedAt: new Date() } }
    )
    return applied.matchedCount > 0
  }

  /** Notes an event as processed; false when it already was. */
  async markProcessed (event: { id: string, type: string, created: number }): Promise<boolean> {
    return await insertOnce(this.#events, { _id: event.id, type: event.type, created: event.created, receivedAt: new Date() })
  }

  /** Forgets an event whose processing failed, so that Stripe's retry is processed. */
  async forgetProcessed (eventId: string): Promise<void> {
    await this.#events.deleteOne({ _id: eventId })
  }

  /** The claim of a trial by one identity: this user's, written now, or the one another user made first. */
  async claimTrial (claimId: string, claim: Omit<TrialClaim, '_id'>): Promise<TrialClaim | null> {
    return await this.#claims.findOneAndUpdate({ _id: claimId }, { $setOnInsert: claim }, { upsert: true, returnDocument: 'after' }).catch(async (error: unknown) => {
      // Two proofs of the same identity at once: the other one claimed it.
      if (isDuplicateKeyError(error)) return await this.#claims.findOne({ _id: claimId })
      throw error
    })
  }

  /** Brings the trial's end forward to `endsAt` (never later). */
  async endTrialBy (userId: string, endsAt: Date): Promise<void> {
    await this.#records.updateOne({ _id: new ObjectId(userId) }, { $min: { trialEndsAt: endsAt }, $set: { updatedAt: new Date() } })
  }
}
