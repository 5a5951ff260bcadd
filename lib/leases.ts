// Leased rows: work that any number of processes may claim (Sync's jobs, the welcome sequence's
// sends) carries who holds it and until when, so one process at a time works on a row and a row
// whose holder died is taken up again once its lease lapses. One spelling of those fields and of
// the three questions asked of them, for every store that leases rows; the holder renews its
// lease with lease-keeper.ts. (The outbox holds a lease per user, not per row: a lock document in
// stores/outbox.ts, renewed the same way.)

export interface Lease {
  /** The holder: a process's worker id, or one claim's own id. */
  leaseOwner: string | null
  leaseUntil: Date | null
}

/** No one holds the row: never leased, released, or its holder's lease lapsed by `now`. */
export function leaseIsFree (now: Date): { $or: [{ leaseUntil: null }, { leaseUntil: { $lte: Date } }] } {
  return { $or: [{ leaseUntil: null }, { leaseUntil: { $lte: now } }] }
}

/** The fields that give the row to `owner` for `leaseMs` from `now`. */
export function leaseTo (owner: string, now: Date, leaseMs: number): Lease {
  return { leaseOwner: owner, leaseUntil: new Date(now.getTime() + leaseMs) }
}

/** The fields of a row no one holds. */
export const NO_LEASE: Lease = Object.freeze({ leaseOwner: null, leaseUntil: null })
