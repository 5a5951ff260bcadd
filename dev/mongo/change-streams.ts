// Change streams, for a server running as a replica set: the committed writes kept as a bounded
// history (what mongod reads from its oplog), and the `$changeStream` cursors reading it. See
// README.md, "Change streams", for the documented behaviour this follows.
import { Aggregator } from 'mingo'
import { Long, Timestamp, calculateObjectSize } from 'bson'
import { CommandError } from './errors.js'
import { isReplacement, type UpdateSpec } from './updates.js'
import { MINGO_OPTIONS, cloneValue, isPlainObject, keyOf } from './values.js'
import type { Doc } from './values.js'

type OperationType = 'insert' | 'update' | 'replace' | 'delete' | 'drop' | 'rename' | 'dropDatabase'

/** A place in the history: a cluster time, and the operation's index within it (transactions). */
interface Position { t: number, i: number, op: number }

/** One committed operation, as an oplog entry describes it. */
export interface ChangeRecord {
  operationType: OperationType
  db: string
  /** Absent for dropDatabase. */
  coll?: string
  documentKey?: Doc
  /** The document inserted, or the replacement. */
  fullDocument?: Doc
  updateDescription?: Doc
  to?: { db: string, coll: string }
  txn?: { lsid: unknown, txnNumber: number }
}

interface Entry extends ChangeRecord {
  at: Position
  clusterTime: Timestamp
  wallTime: Date
}

// mongod sizes its oplog in bytes; the stand-in counts operations.
const DEFAULT_HISTORY = 10_000
// The wait of an awaitData getMore that gives no maxTimeMS (mongod: one second).
const DEFAULT_AWAIT_MS = 1000
const MAX_BATCH_BYTES = 16 * 1024 * 1024 - 16 * 1024

// Stages mongod lets follow $changeStream: those that transform one event at a time.
const ALLOWED_STAGES = new Set([
  '$match', '$project', '$addFields', '$set', '$unset', '$replaceRoot', '$replaceWith', '$redact'
])

const TOKEN_PATTERN = /^82([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})(0[012])$/
const HIGH_WATER_MARK = 0
const EVENT = 1
const INVALIDATE = 2

function compare (a: Position, b: Position): number {
  return a.t - b.t || a.i - b.i || a.op - b.op
}

function hex (value: number): string {
  return (value >>> 0).toString(16).toUpperCase().padStart(8, '0')
}

/**
 * A resume token. Real tokens are an opaque KeyString (`{ _data: "82..." }`) that clients only
 * store and hand back; these carry the cluster time, the operation index and the token's kind.
 */
function token (at: Position, kind: number): Doc {
  return { _data: `82${hex(at.t)}${hex(at.i)}${hex(at.op)}0${kind}` }
}

function parseToken (value: unknown, option: string): { at: Position, kind: number } {
  const data = isPlainObject(value) ? value._data : undefined
  const match = typeof data === 'string' ? TOKEN_PATTERN.exec(data) : null
  if (match === null) throw new CommandError(2, `${option} is not a resume token of this server: ${JSON.stringify(value)}`)
  const [, t, i, op, kind] = match as unknown as [string, string, string, string, string]
  return { at: { t: parseInt(t, 16), i: parseInt(i, 16), op: parseInt(op, 16) }, kind: parseInt(kind, 10) }
}

function historyLost (): CommandError {
  return new CommandError(286, 'Resume of change stream was not possible, as the resume point may no longer be in the oplog.')
}

export class ChangeLog {
  readonly #capacity: number
  readonly #entries: Entry[] = []
  /**
   * Entries before this index are out of the history (the floor is the last of them); they are
   * cut from the array once as many as the capacity gathered, so a write costs no shift of the
   * whole history.
   */
  #start = 0
  // Everything at or before this position has left the history.
  #floor: Position
  #clock: { t: number, i: number }
  readonly #waiters = new Set<() => void>()
  readonly #cursors = new Set<ChangeStreamCursor>()

  constructor (capacity = DEFAULT_HISTORY) {
    this.#capacity = Math.max(1, capacity)
    // Start the counter within the second from the milliseconds, so that tokens an earlier run of
    // the server gave out in this same second still fall before the history and are refused.
    const now = Date.now()
    this.#clock = { t: Math.floor(now / 1000), i: (now % 1000) * 1000 }
    this.#floor = { t: this.#clock.t, i: this.#clock.i, op: 0 }
  }

  #tick (): { t: number, i: number } {
    const seconds = Math.floor(Date.now() / 1000)
    this.#clock = seconds > this.#clock.t ? { t: seconds, i: 1 } : { t: this.#clock.t, i: this.#clock.i + 1 }
    return this.#clock
  }

  /** Operations committed together (one transaction, or one statement): one cluster time. */
  record (operations: ChangeRecord[]): void {
    if (operations.length === 0) return
    const { t, i } = this.#tick()
    const clusterTime = new Timestamp({ t, i })
    const wallTime = new Date()
    operations.forEach((operation, op) => {
      this.#entries.push({ ...operation, at: { t, i, op }, clusterTime, wallTime })
    })
    const excess = this.#entries.length - this.#start - this.#capacity
    if (excess > 0) {
      this.#start += excess
      this.#floor = (this.#entries[this.#start - 1] as Entry).at
      if (this.#start >= this.#capacity) {
        this.#entries.splice(0, this.#start)
        this.#start = 0
      }
    }
    for (const wake of [...this.#waiters]) wake()
  }

  get head (): Position {
    return this.#entries.length > this.#start ? (this.#entries.at(-1) as Entry).at : this.#floor
  }

  /** The index of the first entry after `at`; 286 when entries after it have been discarded. */
  indexAfter (at: Position): number {
    if (compare(at, this.#floor) < 0) throw historyLost()
    let low = this.#start
    let high = this.#entries.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (compare((this.#entries[middle] as Entry).at, at) <= 0) low = middle + 1
      else high = middle
    }
    return low - this.#start
  }

  holds (at: Position): boolean {
    if (compare(at, this.#floor) === 0) return true
    const index = this.indexAfter(at) - 1
    const entry = this.entry(index)
    return index >= 0 && entry !== undefined && compare(entry.at, at) === 0
  }

  entry (index: number): Entry | undefined {
    return index < 0 ? undefined : this.#entries[this.#start + index]
  }

  /** Resolves on the next write, after `ms`, or when `cancel` is called, whichever comes first. */
  async wait (ms: number, onCancel: (cancel: () => void) => void): Promise<void> {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.#waiters.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.#waiters.add(done)
      onCancel(done)
    })
  }

  track (cursor: ChangeStreamCursor): void {
    this.#cursors.add(cursor)
  }

  untrack (cursor: ChangeStreamCursor): void {
    this.#cursors.delete(cursor)
  }

  /** Ends every stream: a server shutting down releases the getMores waiting on it. */
  close (): void {
    for (const cursor of [...this.#cursors]) cursor.kill()
    for (const wake of [...this.#waiters]) wake()
  }
}

/** Looks a committed document up by its `_id`, for `fullDocument: 'updateLookup'`. */
export type Lookup = (db: string, coll: string, id: unknown) => Doc | undefined

export interface StreamOptions {
  /** The stream's scope: a collection, a database (`coll` absent) or the cluster (`db` absent). */
  db?: string
  coll?: string
  stage: Doc
  pipeline: Doc[]
}

export class ChangeStreamCursor {
  readonly #log: ChangeLog
  readonly #db: string | undefined
  readonly #coll: string | undefined
  readonly #fullDocument: string
  readonly #beforeChange: string
  readonly #pipeline: Aggregator | undefined
  readonly #transforms: boolean
  #position: Position
  #cancelWait: (() => void) | undefined
  killed = false
  /** True once an invalidate event went out: the cursor is then closed. */
  finished = false
  /** The connection whose getMore is waiting on this cursor, if any. */
  waitingOn: number | undefined

  constructor (log: ChangeLog, options: StreamOptions) {
    this.#log = log
    this.#db = options.db
    this.#coll = options.coll
    const stage = options.stage
    const known = new Set(['fullDocument', 'fullDocumentBeforeChange', 'resumeAfter', 'startAfter', 'startAtOperationTime', 'allChangesForCluster', 'showExpandedEvents'])
    for (const field of Object.keys(stage)) {
      if (!known.has(field)) throw new CommandError(40415, `BSON field '$changeStream.${field}' is an unknown field.`)
    }
    this.#fullDocument = typeof stage.fullDocument === 'string' ? stage.fullDocument : 'default'
    if (!['default', 'updateLookup', 'whenAvailable', 'required'].includes(this.#fullDocument)) {
      throw new CommandError(2, `'${this.#fullDocument}' is not a valid value for $changeStream.fullDocument`)
    }
    this.#beforeChange = typeof stage.fullDocumentBeforeChange === 'string' ? stage.fullDocumentBeforeChange : 'off'
    if (!['off', 'whenAvailable', 'required'].includes(this.#beforeChange)) {
      throw new CommandError(2, `'${this.#beforeChange}' is not a valid value for $changeStream.fullDocumentBeforeChange`)
    }
    // Pre- and post-images need changeStreamPreAndPostImages on the collection, which the
    // stand-in cannot enable; 'required' would fail on the first event, so it is refused at once.
    if (this.#fullDocument === 'required' || this.#beforeChange === 'required') {
      throw new CommandError(115, "The stand-in keeps no pre- or post-images (changeStreamPreAndPostImages), so 'required' cannot be met")
    }
    for (const raw of options.pipeline) {
      const name = isPlainObject(raw) ? Object.keys(raw)[0] ?? '' : ''
      if (name === '$changeStream') throw new CommandError(40602, '$changeStream is only valid as the first stage in a pipeline')
      if (!ALLOWED_STAGES.has(name)) throw new CommandError(20, `${name} is not permitted in a $changeStream pipeline`)
    }
    this.#transforms = options.pipeline.some((raw) => Object.keys(raw)[0] !== '$match')
    this.#pipeline = options.pipeline.length === 0 ? undefined : new Aggregator(options.pipeline, MINGO_OPTIONS)
    this.#position = this.#start(stage)
  }

  #start (stage: Doc): Position {
    if (stage.resumeAfter !== undefined && stage.startAfter !== undefined) {
      throw new CommandError(50865, 'Do not specify both \'resumeAfter\' and \'startAfter\' in a $changeStream stage')
    }
    const option = stage.startAfter !== undefined ? 'startAfter' : stage.resumeAfter !== undefined ? 'resumeAfter' : undefined
    if (option !== undefined) {
      if (stage.startAtOperationTime !== undefined) {
        throw new CommandError(40674, `Only one type of resume option is allowed, but multiple were found: ${option}, startAtOperationTime`)
      }
      const { at, kind } = parseToken(stage[option], option)
      if (kind === INVALIDATE && option === 'resumeAfter') {
        throw new CommandError(260, 'Attempting to resume a change stream using \'resumeAfter\' is not allowed from an invalidate notification.')
      }
      this.#log.indexAfter(at)
      if (kind !== HIGH_WATER_MARK && !this.#log.holds(at)) {
        throw new CommandError(280, `cannot resume stream; the resume token was not found. ${JSON.stringify(stage[option])}`)
      }
      return at
    }
    const time = stage.startAtOperationTime
    if (time !== undefined) {
      if (!(time instanceof Timestamp)) throw new CommandError(14, "BSON field '$changeStream.startAtOperationTime' is the wrong type, expected type 'timestamp'")
      // Events at that time included: the position just before its first operation.
      const at = { t: time.high, i: time.low, op: -1 }
      this.#log.indexAfter(at)
      return at
    }
    return this.#log.head
  }

  /** The token of the point read up to, for `postBatchResumeToken`. */
  get resumeToken (): Doc {
    return token(this.#position, HIGH_WATER_MARK)
  }

  #inScope (entry: Entry): boolean {
    if (this.#db === undefined) return true
    if (entry.db !== this.#db) return false
    return this.#coll === undefined || entry.coll === undefined || entry.coll === this.#coll
  }

  #invalidates (entry: Entry): boolean {
    if (this.#db === undefined) return false
    if (this.#coll === undefined) return entry.operationType === 'dropDatabase'
    return entry.operationType === 'drop' || entry.operationType === 'rename' || entry.operationType === 'dropDatabase'
  }

  #event (entry: Entry, lookup: Lookup): Doc {
    const event: Doc = { _id: token(entry.at, EVENT), operationType: entry.operationType, clusterTime: entry.clusterTime, wallTime: entry.wallTime }
    const type = entry.operationType
    if (type === 'insert' || type === 'replace') {
      event.fullDocument = entry.fullDocument
    } else if (type === 'update') {
      if (this.#fullDocument === 'updateLookup') {
        // The document as it is now, not as this update left it: the documented semantics.
        event.fullDocument = lookup(entry.db, entry.coll as string, entry.documentKey?._id) ?? null
      } else if (this.#fullDocument === 'whenAvailable') {
        event.fullDocument = null
      }
    }
    event.ns = entry.coll === undefined ? { db: entry.db } : { db: entry.db, coll: entry.coll }
    if (entry.to !== undefined) event.to = entry.to
    if (entry.documentKey !== undefined) event.documentKey = entry.documentKey
    if (entry.updateDescription !== undefined) event.updateDescription = entry.updateDescription
    if (this.#beforeChange === 'whenAvailable' && (type === 'update' || type === 'replace' || type === 'delete')) {
      event.fullDocumentBeforeChange = null
    }
    if (entry.txn !== undefined) {
      event.lsid = entry.txn.lsid
      event.txnNumber = Long.fromNumber(entry.txn.txnNumber)
    }
    return event
  }

  #transform (event: Doc): Doc | undefined {
    if (this.#pipeline === undefined) return event
    const [output] = this.#pipeline.run([this.#transforms ? cloneValue(event) : event]) as Doc[]
    if (output === undefined) return undefined
    if (keyOf(output._id) !== keyOf(event._id)) {
      throw new CommandError(280, 'Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point. Only transformations that retain the unmodified _id field are allowed.')
    }
    return output
  }

  /** The events after the cursor's position that are ready now, up to `batchSize` (0: no limit). */
  collect (lookup: Lookup, batchSize: number): Doc[] {
    const events: Doc[] = []
    if (this.finished) return events
    let bytes = 0
    for (let index = this.#log.indexAfter(this.#position); ; index++) {
      const entry = this.#log.entry(index)
      if (entry === undefined) break
      if (!this.#inScope(entry)) {
        this.#position = entry.at
        continue
      }
      const output = this.#transform(this.#event(entry, lookup))
      if (output !== undefined) {
        const size = calculateObjectSize(output)
        if (events.length > 0 && bytes + size > MAX_BATCH_BYTES) break
        bytes += size
        events.push(output)
      }
      this.#position = entry.at
      if (this.#invalidates(entry)) {
        events.push({ _id: token(entry.at, INVALIDATE), operationType: 'invalidate', clusterTime: entry.clusterTime, wallTime: entry.wallTime })
        this.finished = true
        break
      }
      if (batchSize > 0 && events.length >= batchSize) break
    }
    return events
  }

  /**
   * A getMore: what is ready, or else the first events to come within `maxTimeMS` (an empty
   * batch when none came, as an awaitData cursor answers). Ends early when the cursor is killed.
   */
  async more (lookup: Lookup, batchSize: number, maxTimeMS: number, connectionId: number): Promise<Doc[]> {
    const deadline = Date.now() + (maxTimeMS > 0 ? maxTimeMS : DEFAULT_AWAIT_MS)
    let events = this.collect(lookup, batchSize)
    this.waitingOn = connectionId
    try {
      while (events.length === 0 && !this.finished && !this.killed) {
        const left = deadline - Date.now()
        if (left <= 0) break
        await this.#log.wait(left, (cancel) => { this.#cancelWait = cancel })
        this.#cancelWait = undefined
        if (this.killed) break
        events = this.collect(lookup, batchSize)
      }
    } finally {
      this.waitingOn = undefined
    }
    if (this.killed) throw new CommandError(237, 'cursor killed while a getMore was waiting on it')
    return events
  }

  kill (): void {
    this.killed = true
    this.#log.untrack(this)
    this.#cancelWait?.()
  }
}

/** Whether an update spec replaces the document (a replace event) rather than modifying it. */
function replaces (update: UpdateSpec | undefined): boolean {
  return isPlainObject(update) && isReplacement(update)
}

/**
 * `updateDescription` for an update. mongod logs the paths its operators touched (a `$set` of a
 * whole subdocument is one field, appended array elements are `array.N`); a pipeline update is
 * logged as a difference of the two documents, nested fields and array elements included.
 */
function describeUpdate (before: Doc, after: Doc, update: UpdateSpec): Doc {
  const touched: string[] = []
  if (!Array.isArray(update)) {
    for (const [operator, fields] of Object.entries(update)) {
      if (operator === '$setOnInsert' || !isPlainObject(fields)) continue
      for (const [path, value] of Object.entries(fields)) {
        touched.push(path)
        if (operator === '$rename' && typeof value === 'string') touched.push(value)
      }
    }
  }
  // A positional path ($, $[], $[name]) touches the array at its prefix, element by element.
  const prefixes = touched.map((path) => {
    const parts = path.split('.')
    const positional = parts.findIndex((part) => part.startsWith('$'))
    return positional === -1 ? { path, deep: false } : { path: parts.slice(0, positional).join('.'), deep: true }
  })
  const descend = Array.isArray(update)
    ? () => true
    : (path: string) => prefixes.some((prefix) => prefix.path.startsWith(path + '.') ||
      (prefix.deep && (prefix.path === path || path.startsWith(prefix.path + '.'))))
  const appends = Array.isArray(update)
    ? () => true
    : (path: string) => prefixes.some((prefix) => prefix.path === path)
  const updatedFields: Doc = {}
  const removedFields: string[] = []
  const truncatedArrays: Doc[] = []
  const diff = (from: Doc, to: Doc, prefix: string): void => {
    for (const [field, value] of Object.entries(to)) {
      const path = prefix + field
      if (!(field in from)) {
        updatedFields[path] = value
      } else if (keyOf(from[field]) !== keyOf(value)) {
        compareValues(from[field], value, path)
      }
    }
    for (const field of Object.keys(from)) {
      if (!(field in to)) removedFields.push(prefix + field)
    }
  }
  const compareValues = (from: unknown, to: unknown, path: string): void => {
    if (isPlainObject(from) && isPlainObject(to) && descend(path)) {
      diff(from, to, path + '.')
      return
    }
    if (Array.isArray(from) && Array.isArray(to)) {
      const prefixKept = from.every((element, index) => index >= to.length || keyOf(element) === keyOf(to[index]))
      if (descend(path)) {
        if (to.length < from.length) truncatedArrays.push({ field: path, newSize: to.length })
        to.forEach((element, index) => {
          if (index >= from.length) updatedFields[`${path}.${index}`] = element
          else if (keyOf(from[index]) !== keyOf(element)) compareValues(from[index], element, `${path}.${index}`)
        })
        return
      }
      if (appends(path) && prefixKept && to.length > from.length) {
        for (let index = from.length; index < to.length; index++) updatedFields[`${path}.${index}`] = to[index]
        return
      }
    }
    updatedFields[path] = to
  }
  diff(before, after, '')
  return { updatedFields, removedFields, truncatedArrays }
}

/** The change event record of one document change in `db.coll`. */
export function recordOf (db: string, coll: string, change: { before?: Doc | undefined, after?: Doc | undefined, update?: UpdateSpec | undefined }): ChangeRecord {
  const { before, after, update } = change
  if (before === undefined) return { operationType: 'insert', db, coll, documentKey: { _id: (after as Doc)._id }, fullDocument: after as Doc }
  if (after === undefined) return { operationType: 'delete', db, coll, documentKey: { _id: before._id } }
  if (update === undefined || replaces(update)) return { operationType: 'replace', db, coll, documentKey: { _id: after._id }, fullDocument: after }
  return { operationType: 'update', db, coll, documentKey: { _id: after._id }, updateDescription: describeUpdate(before, after, update) }
}
