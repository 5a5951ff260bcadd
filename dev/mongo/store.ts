// All databases of one server, the write path shared by every command, and multi-document
// transactions: a transaction keeps its writes in an overlay, locks what it wrote, and applies the
// overlay in one step at commit.
import { Query } from 'mingo'
import { recordOf } from './change-streams.js'
import type { ChangeLog } from './change-streams.js'
import { Collection } from './collection.js'
import type { Change, IndexSpec } from './collection.js'
import { CommandError, writeConflict } from './errors.js'
import { MINGO_OPTIONS } from './values.js'
import type { Doc } from './values.js'

export interface ScanStats {
  examined: number
  index: IndexSpec | undefined
}

type Overlay = Map<string, Map<string, { after: Doc | undefined }>>

/** Thrown inside a write that must wait for a transaction holding a lock to finish. */
export class LockWait {
  readonly until: Promise<void>
  constructor (until: Promise<void>) { this.until = until }
}

// mongod's transactionLifetimeLimitSeconds default.
const TRANSACTION_LIFETIME_MS = 60_000

export class Transaction {
  readonly txnNumber: number
  readonly startSeq: number
  readonly overlay: Overlay = new Map()
  readonly locks = new Set<string>()
  // Every write in order, for the change events its commit produces (one per operation, as mongod
  // logs them, where the overlay keeps only each document's last state).
  readonly writes: Array<{ collection: Collection, change: Change }> = []
  /** The session, which change events of the transaction's writes name. */
  lsid: unknown
  state: 'active' | 'committed' | 'aborted' = 'active'
  abortReason: CommandError | undefined
  readonly done: Promise<void>
  resolveDone: () => void = () => {}
  timer: NodeJS.Timeout | undefined

  constructor (txnNumber: number, startSeq: number) {
    this.txnNumber = txnNumber
    this.startSeq = startSeq
    this.done = new Promise((resolve) => { this.resolveDone = resolve })
  }
}

export interface StoreListener {
  changed (collection: Collection): void
  dropped (db: string, name: string): void
}

export class Store {
  readonly databases = new Map<string, Map<string, Collection>>()
  #seq = 0
  // While transactions are open: for each document changed since, the commits that changed it and
  // what it was before each, so a transaction reads its snapshot and detects write conflicts.
  readonly #history = new Map<string, Map<string, Array<{ seq: number, before: Doc | undefined }>>>()
  readonly #locks = new Map<string, Transaction>()
  readonly active = new Set<Transaction>()
  listener: StoreListener | undefined
  /** The history change streams read; only a replica set keeps one (mongod: the oplog). */
  changes: ChangeLog | undefined

  collection (db: string, name: string): Collection | undefined {
    return this.databases.get(db)?.get(name)
  }

  ensureCollection (db: string, name: string, options: Doc = {}): Collection {
    let collections = this.databases.get(db)
    if (collections === undefined) {
      collections = new Map()
      this.databases.set(db, collections)
    }
    let collection = collections.get(name)
    if (collection === undefined) {
      collection = new Collection(db, name, options)
      collections.set(name, collection)
      this.listener?.changed(collection)
    }
    return collection
  }

  dropCollection (db: string, name: string): Collection | undefined {
    const collections = this.databases.get(db)
    const collection = collections?.get(name)
    if (collections === undefined || collection === undefined) return undefined
    collections.delete(name)
    if (collections.size === 0) this.databases.delete(db)
    this.listener?.dropped(db, name)
    return collection
  }

  dropDatabase (db: string): void {
    for (const name of [...(this.databases.get(db)?.keys() ?? [])]) this.dropCollection(db, name)
    this.databases.delete(db)
  }

  /** Every document of a collection as seen from `txn` (or as committed), in natural order. */
  all (db: string, name: string, txn?: Transaction): Doc[] {
    return this.find(db, name, {}, txn).map(([, document]) => document)
  }

  /**
   * `[id, document]` pairs matching a filter: the committed documents, or for a transaction the
   * documents as they were when it started, with its own writes on top.
   */
  find (db: string, name: string, filter: Doc, txn?: Transaction, stats?: ScanStats): Array<[string, Doc]> {
    const collection = this.collection(db, name)
    const namespace = `${db}.${name}`
    const overlay = txn?.overlay.get(namespace)
    const history = txn === undefined ? undefined : this.#history.get(namespace)
    const candidates = collection?.candidates(filter)
    const trusted = candidates?.exact === true && overlay === undefined && history === undefined
    const query = Object.keys(filter).length === 0 || trusted ? undefined : new Query(filter, MINGO_OPTIONS)
    const found: Array<[string, Doc]> = []
    if (stats !== undefined) stats.index = candidates?.index
    const matches = (document: Doc): boolean => query === undefined || query.test(document)
    const seen = history === undefined ? undefined : new Set<string>()
    for (const [id, current] of candidates?.entries ?? []) {
      if (stats !== undefined) stats.examined++
      seen?.add(id)
      if (overlay?.has(id) === true) continue
      const document = history === undefined ? current : snapshotOf(history, id, current, (txn as Transaction).startSeq)
      if (document !== undefined && matches(document)) found.push([id, document])
    }
    // Documents changed or deleted since the snapshot that the index no longer leads to.
    for (const [id, changes] of history ?? []) {
      if (seen?.has(id) === true || overlay?.has(id) === true) continue
      const before = changes.find((change) => change.seq > (txn as Transaction).startSeq)?.before
      if (before !== undefined && matches(before)) found.push([id, before])
    }
    if (overlay !== undefined) {
      for (const [id, { after }] of overlay) {
        if (after !== undefined && matches(after)) found.push([id, after])
      }
    }
    return found
  }

  /**
   * Applies changes to one collection. Outside a transaction they are committed at once (after
   * waiting for any transaction holding a lock on any of them, before changing anything); inside
   * one they go to its overlay.
   */
  write (collection: Collection, changes: Change[], txn?: Transaction): void {
    if (txn !== undefined) {
      this.#writeInTransaction(collection, changes, txn)
      return
    }
    for (const change of this.#locks.size > 0 ? changes : []) {
      for (const lock of this.#lockNames(collection, change)) {
        const holder = this.#locks.get(lock)
        if (holder !== undefined) throw new LockWait(holder.done)
      }
    }
    // One document at a time, as mongod does: a failure keeps the changes made before it.
    const applied: Change[] = []
    try {
      for (const change of changes) {
        collection.applyChanges([change])
        applied.push(change)
      }
    } finally {
      if (applied.length > 0) this.#committed(collection, applied)
      // Each document written outside a transaction is an oplog entry of its own.
      const log = this.changes
      if (log !== undefined) for (const change of applied) log.record([recordOf(collection.db, collection.name, change)])
    }
  }

  #committed (collection: Collection, changes: Change[]): void {
    this.#seq++
    if (this.active.size > 0) {
      let history = this.#history.get(collection.namespace)
      if (history === undefined) {
        history = new Map()
        this.#history.set(collection.namespace, history)
      }
      for (const change of changes) {
        const entries = history.get(change.id) ?? []
        entries.push({ seq: this.#seq, before: change.before })
        history.set(change.id, entries)
      }
    }
    this.listener?.changed(collection)
  }

  #lockNames (collection: Collection, change: Change): string[] {
    const names = [`${collection.namespace}\0${change.id}`]
    for (const document of [change.before, change.after]) {
      if (document === undefined) continue
      for (const index of collection.indexes.values()) {
        if (index.spec.unique !== true) continue
        for (const { key } of index.keysOf(document)) names.push(`${collection.namespace}\0${index.spec.name}\0${key}`)
      }
    }
    return names
  }

  #writeInTransaction (collection: Collection, changes: Change[], txn: Transaction): void {
    const namespace = collection.namespace
    let overlay = txn.overlay.get(namespace)
    if (overlay === undefined) {
      overlay = new Map()
      txn.overlay.set(namespace, overlay)
    }
    const history = this.#history.get(namespace)
    for (const change of changes) {
      const locks = this.#lockNames(collection, change)
      const conflicting = locks.some((lock) => {
        const holder = this.#locks.get(lock)
        return holder !== undefined && holder !== txn
      })
      const lastCommit = history?.get(change.id)?.at(-1)?.seq ?? 0
      if (conflicting || lastCommit > txn.startSeq) {
        this.abort(txn)
        throw writeConflict()
      }
      if (change.after !== undefined) this.#checkUniqueInOverlay(collection, overlay, change)
      for (const lock of locks) {
        this.#locks.set(lock, txn)
        txn.locks.add(lock)
      }
      overlay.set(change.id, { after: change.after })
      txn.writes.push({ collection, change })
    }
  }

  #checkUniqueInOverlay (collection: Collection, overlay: Map<string, { after: Doc | undefined }>, change: Change): void {
    const document = change.after as Doc
    const committedId = collection.docs.has(change.id) && !overlay.has(change.id)
    const overlaidId = overlay.get(change.id)?.after !== undefined
    if (change.before === undefined && (committedId || overlaidId)) {
      throw collection.duplicateKey('_id_', { _id: 1 }, { _id: document._id })
    }
    for (const { index, values, ids } of collection.uniqueHolders(document)) {
      for (const id of ids) {
        if (id !== change.id && !overlay.has(id)) throw collection.duplicateKey(index.spec.name, index.spec.key, index.keyValue(values))
      }
    }
    for (const index of collection.indexes.values()) {
      if (index.spec.unique !== true) continue
      const keys = new Map(index.keysOf(document).map((entry) => [entry.key, entry.values]))
      for (const [id, { after }] of overlay) {
        if (id === change.id || after === undefined) continue
        for (const { key } of index.keysOf(after)) {
          const values = keys.get(key)
          if (values !== undefined) throw collection.duplicateKey(index.spec.name, index.spec.key, index.keyValue(values))
        }
      }
    }
  }

  begin (txnNumber: number, onExpire: (txn: Transaction) => void): Transaction {
    const txn = new Transaction(txnNumber, this.#seq)
    this.active.add(txn)
    txn.timer = setTimeout(() => onExpire(txn), TRANSACTION_LIFETIME_MS)
    txn.timer.unref()
    return txn
  }

  commit (txn: Transaction): void {
    const applied: Array<[Collection, Change[]]> = []
    try {
      for (const [namespace, overlay] of txn.overlay) {
        const dot = namespace.indexOf('.')
        const collection = this.ensureCollection(namespace.slice(0, dot), namespace.slice(dot + 1))
        const changes: Change[] = [...overlay].map(([id, { after }]) => ({ id, before: collection.docs.get(id), after }))
        collection.applyChanges(changes)
        applied.push([collection, changes])
      }
    } catch (error) {
      for (const [collection, changes] of applied.reverse()) {
        collection.applyChanges(changes.map(({ id, before, after }) => ({ id, before: after, after: before })))
      }
      this.abort(txn)
      throw error
    }
    for (const [collection, changes] of applied) this.#committed(collection, changes)
    // A transaction's operations share the commit's cluster time, so streams see them only now.
    const session = { lsid: txn.lsid, txnNumber: txn.txnNumber }
    this.changes?.record(txn.writes.map(({ collection, change }) => ({ ...recordOf(collection.db, collection.name, change), txn: session })))
    this.#finish(txn, 'committed')
  }

  abort (txn: Transaction): void {
    if (txn.state === 'active') this.#finish(txn, 'aborted')
  }

  #finish (txn: Transaction, state: 'committed' | 'aborted'): void {
    txn.state = state
    clearTimeout(txn.timer)
    for (const lock of txn.locks) {
      if (this.#locks.get(lock) === txn) this.#locks.delete(lock)
    }
    txn.locks.clear()
    this.active.delete(txn)
    // History only matters to transactions that started before a write; with none left, forget it.
    if (this.active.size === 0) this.#history.clear()
    txn.resolveDone()
  }
}

/** A document as it was at `seq`: the state before the first commit after it, if any. */
function snapshotOf (history: Map<string, Array<{ seq: number, before: Doc | undefined }>>, id: string, current: Doc, seq: number): Doc | undefined {
  const changes = history.get(id)
  if (changes === undefined) return current
  const first = changes.find((change) => change.seq > seq)
  return first === undefined ? current : first.before
}
