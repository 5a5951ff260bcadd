// The database commands, each taking the parsed command document and returning its reply.
import { Aggregator, Query } from 'mingo'
import { Long, calculateObjectSize } from 'bson'
import { ChangeStreamCursor } from './change-streams.js'
import type { Lookup } from './change-streams.js'
import type { Collection, IndexSpec } from './collection.js'
import { CommandError } from './errors.js'
import { LockWait } from './store.js'
import type { ScanStats, Store, Transaction } from './store.js'
import { applyUpdate, sameDocument, upsertDocument, withId } from './updates.js'
import type { UpdateSpec } from './updates.js'
import { MINGO_OPTIONS, isPlainObject, keyOf, pathValues } from './values.js'
import type { Doc } from './values.js'

export interface CursorState {
  id: Long
  namespace: string
  documents: Doc[]
  position: number
  lastUsed: number
  /** Set for a `$changeStream` cursor (tailable, awaitData), which reads the change history instead. */
  changeStream?: ChangeStreamCursor
}

export interface CommandContext {
  store: Store
  db: string
  txn: Transaction | undefined
  connectionId: number
  cursors: Map<string, CursorState>
  newCursorId: () => Long
}

export type Handler = (ctx: CommandContext, command: Doc) => Promise<Doc> | Doc

// mongod's defaults: 101 documents in a first batch, and batches capped near the 16 MB limit.
const DEFAULT_FIRST_BATCH = 101
const MAX_BATCH_BYTES = 16 * 1024 * 1024 - 16 * 1024

function collectionName (command: Doc, name: string): string {
  const value = command[name]
  if (typeof value !== 'string' || value.length === 0) {
    throw new CommandError(73, `Invalid namespace specified '${String(value)}'`)
  }
  return value
}

function asNumber (value: unknown, fallback: number): number {
  if (value === undefined || value === null) return fallback
  if (typeof value === 'number') return value
  if (value instanceof Long) return value.toNumber()
  return Number(value)
}

function asDoc (value: unknown, fallback: Doc = {}): Doc {
  if (value === undefined || value === null) return fallback
  if (!isPlainObject(value)) throw new CommandError(14, 'expected an object')
  return value
}

/** Runs one write statement, waiting for a transaction that holds a lock on its documents. */
async function statement<T> (run: () => T): Promise<T> {
  for (;;) {
    try {
      return run()
    } catch (error) {
      if (!(error instanceof LockWait)) throw error
      await error.until
    }
  }
}

/** A cursor reply; a first batch size of 0 asks for an empty first batch, as on mongod. */
function batchReply (ctx: CommandContext, namespace: string, documents: Doc[], firstBatchSize: number, singleBatch: boolean): Doc {
  const batch = firstBatchSize === 0 ? [] : takeBatch(documents, 0, firstBatchSize)
  let id = Long.ZERO
  if (!singleBatch && batch.length < documents.length) {
    id = ctx.newCursorId()
    ctx.cursors.set(id.toString(), { id, namespace, documents, position: batch.length, lastUsed: Date.now() })
  }
  return { cursor: { firstBatch: batch, id, ns: namespace }, ok: 1 }
}

function takeBatch (documents: Doc[], start: number, size: number): Doc[] {
  const end = size > 0 ? Math.min(documents.length, start + size) : documents.length
  const batch: Doc[] = []
  let bytes = 0
  for (let i = start; i < end; i++) {
    const document = documents[i] as Doc
    bytes += calculateObjectSize(document)
    if (batch.length > 0 && bytes > MAX_BATCH_BYTES) break
    batch.push(document)
  }
  return batch
}

function resolver (ctx: CommandContext): (name: string) => Doc[] {
  return (name) => ctx.store.all(ctx.db, name, ctx.txn)
}

function runQuery (ctx: CommandContext, name: string, command: Doc): Doc[] {
  const filter = asDoc(command.filter)
  const matched = ctx.store.find(ctx.db, name, filter, ctx.txn).map(([, document]) => document)
  const projection = command.projection === undefined ? undefined : asDoc(command.projection)
  const sort = command.sort === undefined ? undefined : asDoc(command.sort)
  const skip = asNumber(command.skip, 0)
  const limit = Math.abs(asNumber(command.limit, 0))
  const noProjection = projection === undefined || Object.keys(projection).length === 0
  if (noProjection && (sort === undefined || Object.keys(sort).length === 0)) {
    // The store already applied the filter; without sort or projection the rest is slicing.
    return matched.slice(skip, limit > 0 ? skip + limit : undefined)
  }
  // The filter is already applied, so mingo only sorts, slices and projects.
  const positional = !noProjection && Object.keys(projection).some((path) => path.endsWith('.$'))
  let cursor = new Query(positional ? filter : {}, { ...MINGO_OPTIONS, collectionResolver: resolver(ctx) }).find(matched, noProjection ? undefined : projection)
  if (sort !== undefined && Object.keys(sort).length > 0) cursor = cursor.sort(sort as Record<string, 1 | -1>)
  if (skip > 0) cursor = cursor.skip(skip)
  if (limit > 0) cursor = cursor.limit(limit)
  return cursor.all() as Doc[]
}

const find: Handler = (ctx, command) => {
  const name = collectionName(command, 'find')
  const documents = runQuery(ctx, name, command)
  const limit = asNumber(command.limit, 0)
  const batchSize = asNumber(command.batchSize, DEFAULT_FIRST_BATCH)
  const singleBatch = command.singleBatch === true || limit < 0
  return batchReply(ctx, `${ctx.db}.${name}`, documents, batchSize, singleBatch)
}

function lookup (ctx: CommandContext): Lookup {
  return (db, coll, id) => ctx.store.collection(db, coll)?.docs.get(keyOf(id))
}

/** A getMore on a change stream: waits for events up to maxTimeMS, as an awaitData cursor does. */
async function changeStreamGetMore (ctx: CommandContext, cursor: CursorState, stream: ChangeStreamCursor, command: Doc): Promise<Doc> {
  const key = cursor.id.toString()
  let events: Doc[]
  try {
    events = await stream.more(lookup(ctx), asNumber(command.batchSize, 0), asNumber(command.maxTimeMS, 0), ctx.connectionId)
  } catch (error) {
    // A getMore that fails ends its cursor, as on mongod.
    stream.kill()
    ctx.cursors.delete(key)
    throw error
  }
  cursor.lastUsed = Date.now()
  let id = cursor.id
  if (stream.finished) {
    stream.kill()
    ctx.cursors.delete(key)
    id = Long.ZERO
  }
  return { cursor: { nextBatch: events, postBatchResumeToken: stream.resumeToken, id, ns: cursor.namespace }, ok: 1 }
}

const getMore: Handler = async (ctx, command) => {
  // Cursor ids arrive as int64, which the decoder turns into numbers when they fit.
  const id = command.getMore instanceof Long ? command.getMore : Long.fromNumber(asNumber(command.getMore, 0))
  const cursor = ctx.cursors.get(id.toString())
  const namespace = `${ctx.db}.${String(command.collection)}`
  if (cursor === undefined || cursor.namespace !== namespace) {
    throw new CommandError(43, `cursor id ${id.toString()} not found`)
  }
  cursor.lastUsed = Date.now()
  if (cursor.changeStream !== undefined) return await changeStreamGetMore(ctx, cursor, cursor.changeStream, command)
  const batch = takeBatch(cursor.documents, cursor.position, asNumber(command.batchSize, 0))
  cursor.position += batch.length
  cursor.lastUsed = Date.now()
  let replyId = cursor.id
  if (cursor.position >= cursor.documents.length) {
    ctx.cursors.delete(id.toString())
    replyId = Long.ZERO
  }
  return { cursor: { nextBatch: batch, id: replyId, ns: namespace }, ok: 1 }
}

const killCursors: Handler = (ctx, command) => {
  const killed: Long[] = []
  const notFound: Long[] = []
  for (const value of Array.isArray(command.cursors) ? command.cursors : []) {
    const id = value instanceof Long ? value : Long.fromNumber(asNumber(value, 0))
    const cursor = ctx.cursors.get(id.toString())
    // Also releases a getMore waiting on a change stream, which then fails with CursorKilled.
    cursor?.changeStream?.kill()
    if (ctx.cursors.delete(id.toString())) killed.push(id)
    else notFound.push(id)
  }
  return { cursorsKilled: killed, cursorsNotFound: notFound, cursorsAlive: [], cursorsUnknown: [], ok: 1 }
}

function writeReply (n: number, writeErrors: Doc[], extra: Doc = {}): Doc {
  const reply: Doc = { n, ...extra }
  if (writeErrors.length > 0) reply.writeErrors = writeErrors
  reply.ok = 1
  return reply
}

/** Runs the statements of a write command: ordered ones stop at the first error. */
async function eachStatement<T> (ctx: CommandContext, statements: T[], ordered: boolean, run: (statement: T, index: number) => Promise<void>): Promise<Doc[]> {
  const writeErrors: Doc[] = []
  for (const [index, item] of statements.entries()) {
    try {
      await run(item, index)
    } catch (error) {
      if (!(error instanceof CommandError)) throw error
      // A failed statement aborts the transaction it ran in, as on mongod; WriteConflict is a command error.
      if (ctx.txn !== undefined) {
        ctx.store.abort(ctx.txn)
        if (error.code === 112) throw error
      }
      writeErrors.push(error.toWriteError(index))
      if (ordered) break
    }
  }
  return writeErrors
}

function prepareInsert (document: unknown): Doc {
  if (!isPlainObject(document)) throw new CommandError(2, 'document to insert must be an object')
  const prepared = withId(document)
  if (Array.isArray(prepared._id)) throw new CommandError(2, "can't use an array for _id")
  if (prepared._id instanceof RegExp) throw new CommandError(2, "can't use a regex for _id")
  return prepared
}

const insert: Handler = async (ctx, command) => {
  const collection = ctx.store.ensureCollection(ctx.db, collectionName(command, 'insert'))
  const documents: unknown[] = Array.isArray(command.documents) ? command.documents : []
  let n = 0
  const writeErrors = await eachStatement(ctx, documents, command.ordered !== false, async (document) => {
    const prepared = prepareInsert(document)
    await statement(() => ctx.store.write(collection, [{ id: keyOf(prepared._id), after: prepared }], ctx.txn))
    n++
  })
  return writeReply(n, writeErrors)
}

interface UpdateOutcome { matched: number, modified: number, upsertedId?: unknown, before?: Doc, after?: Doc }

function selectMatches (ctx: CommandContext, collection: Collection, filter: Doc, sort: Doc | undefined, multi: boolean): Array<[string, Doc]> {
  let matches = ctx.store.find(ctx.db, collection.name, filter, ctx.txn)
  if (sort !== undefined && Object.keys(sort).length > 0 && matches.length > 1) {
    const order = new Query({}, MINGO_OPTIONS).find(matches.map(([, document]) => document)).sort(sort as Record<string, 1 | -1>).all()
    const ids = new Map(matches.map(([id, document]) => [document, id]))
    matches = order.map((document) => [ids.get(document as Doc) as string, document as Doc])
  }
  return multi ? matches : matches.slice(0, 1)
}

function updateDocuments (ctx: CommandContext, collection: Collection, options: {
  filter: Doc, update: UpdateSpec, multi: boolean, upsert: boolean, arrayFilters?: Doc[] | undefined, sort?: Doc | undefined
}): UpdateOutcome {
  const matches = selectMatches(ctx, collection, options.filter, options.sort, options.multi)
  if (matches.length === 0) {
    if (!options.upsert) return { matched: 0, modified: 0 }
    const document = upsertDocument(options.filter, options.update, options.arrayFilters)
    ctx.store.write(collection, [{ id: keyOf(document._id), after: document }], ctx.txn)
    return { matched: 0, modified: 0, upsertedId: document._id, after: document }
  }
  const changes = []
  let first: { before: Doc, after: Doc } | undefined
  for (const [id, document] of matches) {
    const after = applyUpdate(document, options.update, { filter: options.filter, arrayFilters: options.arrayFilters, inserting: false })
    first ??= { before: document, after }
    if (!sameDocument(document, after)) changes.push({ id, before: document, after, update: options.update })
  }
  if (changes.length > 0) ctx.store.write(collection, changes, ctx.txn)
  return { matched: matches.length, modified: changes.length, before: first?.before, after: first?.after }
}

const update: Handler = async (ctx, command) => {
  const collection = ctx.store.ensureCollection(ctx.db, collectionName(command, 'update'))
  const statements: unknown[] = Array.isArray(command.updates) ? command.updates : []
  let n = 0
  let nModified = 0
  const upserted: Doc[] = []
  const writeErrors = await eachStatement(ctx, statements, command.ordered !== false, async (raw, index) => {
    const spec = asDoc(raw)
    const updateSpec = spec.u
    if (!Array.isArray(updateSpec) && !isPlainObject(updateSpec)) throw new CommandError(9, 'Update argument must be either an object or an array')
    const outcome = await statement(() => updateDocuments(ctx, collection, {
      filter: asDoc(spec.q),
      update: updateSpec as UpdateSpec,
      multi: spec.multi === true,
      upsert: spec.upsert === true,
      arrayFilters: Array.isArray(spec.arrayFilters) ? spec.arrayFilters as Doc[] : undefined
    }))
    if (outcome.upsertedId !== undefined) {
      n += 1
      upserted.push({ index, _id: outcome.upsertedId })
    } else {
      n += outcome.matched
      nModified += outcome.modified
    }
  })
  return writeReply(n, writeErrors, upserted.length > 0 ? { nModified, upserted } : { nModified })
}

const remove: Handler = async (ctx, command) => {
  const name = collectionName(command, 'delete')
  const statements: unknown[] = Array.isArray(command.deletes) ? command.deletes : []
  let n = 0
  const writeErrors = await eachStatement(ctx, statements, command.ordered !== false, async (raw) => {
    const spec = asDoc(raw)
    const collection = ctx.store.collection(ctx.db, name)
    if (collection === undefined) return
    n += await statement(() => {
      let matches = ctx.store.find(ctx.db, name, asDoc(spec.q), ctx.txn)
      if (asNumber(spec.limit, 0) === 1) matches = matches.slice(0, 1)
      if (matches.length > 0) ctx.store.write(collection, matches.map(([id, before]) => ({ id, before })), ctx.txn)
      return matches.length
    })
  })
  return writeReply(n, writeErrors)
}

function project (document: Doc | undefined, fields: unknown): Doc | null {
  if (document === undefined) return null
  if (!isPlainObject(fields) || Object.keys(fields).length === 0) return document
  return new Query({}, MINGO_OPTIONS).find([document], fields).all()[0] as Doc
}

const findAndModify: Handler = async (ctx, command) => {
  const name = collectionName(command, Object.keys(command)[0] as string)
  const filter = asDoc(command.query)
  const sort = command.sort === undefined ? undefined : asDoc(command.sort)
  const collection = ctx.store.ensureCollection(ctx.db, name)
  try {
    if (command.remove === true) {
      const removed = await statement(() => {
        const [match] = selectMatches(ctx, collection, filter, sort, false)
        if (match === undefined) return undefined
        ctx.store.write(collection, [{ id: match[0], before: match[1] }], ctx.txn)
        return match[1]
      })
      return { lastErrorObject: { n: removed === undefined ? 0 : 1 }, value: project(removed, command.fields), ok: 1 }
    }
    const updateSpec = command.update
    if (!Array.isArray(updateSpec) && !isPlainObject(updateSpec)) throw new CommandError(9, 'Either an update or remove=true must be specified')
    const outcome = await statement(() => updateDocuments(ctx, collection, {
      filter,
      update: updateSpec as UpdateSpec,
      multi: false,
      upsert: command.upsert === true,
      sort,
      arrayFilters: Array.isArray(command.arrayFilters) ? command.arrayFilters as Doc[] : undefined
    }))
    const lastErrorObject: Doc = { n: outcome.upsertedId !== undefined ? 1 : outcome.matched, updatedExisting: outcome.matched > 0 }
    if (outcome.upsertedId !== undefined) lastErrorObject.upserted = outcome.upsertedId
    const value = command.new === true ? outcome.after : outcome.upsertedId !== undefined ? undefined : outcome.before
    return { lastErrorObject, value: project(value, command.fields), ok: 1 }
  } catch (error) {
    if (error instanceof CommandError && ctx.txn !== undefined) ctx.store.abort(ctx.txn)
    throw error
  }
}

const count: Handler = (ctx, command) => {
  const name = collectionName(command, 'count')
  let n = ctx.store.find(ctx.db, name, asDoc(command.query), ctx.txn).length
  n = Math.max(0, n - asNumber(command.skip, 0))
  const limit = Math.abs(asNumber(command.limit, 0))
  if (limit > 0) n = Math.min(n, limit)
  return { n, ok: 1 }
}

const distinct: Handler = (ctx, command) => {
  const name = collectionName(command, 'distinct')
  const key = command.key
  if (typeof key !== 'string') throw new CommandError(14, "BSON field 'distinct.key' is missing but a required field")
  const seen = new Map<string, unknown>()
  for (const [, document] of ctx.store.find(ctx.db, name, asDoc(command.query), ctx.txn)) {
    for (const value of pathValues(document, key)) {
      if (value !== undefined && !seen.has(keyOf(value))) seen.set(keyOf(value), value)
    }
  }
  return { values: [...seen.values()], ok: 1 }
}

const aggregate: Handler = (ctx, command) => {
  const pipeline = command.pipeline
  if (!Array.isArray(pipeline)) throw new CommandError(14, "'pipeline' option must be specified as an array")
  const first: unknown = pipeline[0]
  if (isPlainObject(first) && Object.keys(first)[0] === '$changeStream' && ctx.store.changes !== undefined) {
    return openChangeStream(ctx, command, first.$changeStream, pipeline.slice(1) as Doc[])
  }
  for (const stage of pipeline) {
    const stageName = isPlainObject(stage) ? Object.keys(stage)[0] : undefined
    if (stageName === '$changeStream') {
      if (ctx.store.changes !== undefined) throw new CommandError(40602, '$changeStream is only valid as the first stage in a pipeline')
      throw new CommandError(40573, 'The $changeStream stage is only supported on replica sets')
    }
    if (stageName === '$out' || stageName === '$merge') {
      throw new CommandError(40324, `Unrecognized pipeline stage name: '${stageName}'`)
    }
  }
  const source = command.aggregate
  let input: Doc[] = []
  let namespace = `${ctx.db}.$cmd.aggregate`
  if (typeof source === 'string') {
    namespace = `${ctx.db}.${source}`
    const first = pipeline[0]
    // A leading $match narrows the input through the indexes before mingo sees it.
    const filter = isPlainObject(first) && isPlainObject(first.$match) ? first.$match : {}
    input = ctx.store.find(ctx.db, source, filter, ctx.txn).map(([, document]) => document)
  }
  let documents: Doc[]
  try {
    documents = new Aggregator(pipeline as Doc[], { ...MINGO_OPTIONS, collectionResolver: resolver(ctx) }).run(input) as Doc[]
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    if (/unknown|unrecognized|not registered/i.test(message)) throw new CommandError(40324, message)
    throw new CommandError(2, message)
  }
  const cursorOptions = asDoc(command.cursor)
  return batchReply(ctx, namespace, documents, asNumber(cursorOptions.batchSize, DEFAULT_FIRST_BATCH), false)
}

/** `aggregate` with a leading `$changeStream` on a replica set: opens a tailable, awaitData cursor. */
function openChangeStream (ctx: CommandContext, command: Doc, rawStage: unknown, rest: Doc[]): Doc {
  const log = ctx.store.changes
  if (log === undefined) throw new CommandError(40573, 'The $changeStream stage is only supported on replica sets')
  if (ctx.txn !== undefined) throw new CommandError(263, 'Operation not permitted in transaction :: caused by :: $changeStream cannot run in a multi-document transaction')
  const stage = asDoc(rawStage)
  const source = command.aggregate
  let scope: { db?: string, coll?: string }
  let namespace: string
  if (typeof source === 'string') {
    scope = { db: ctx.db, coll: source }
    namespace = `${ctx.db}.${source}`
  } else if (asNumber(source, 0) === 1) {
    const cluster = stage.allChangesForCluster === true
    if (cluster !== (ctx.db === 'admin')) {
      throw new CommandError(73, cluster
        ? "$changeStream may only be run on the 'admin' database if {allChangesForCluster: true} is specified"
        : '$changeStream may not be opened on the internal admin database')
    }
    scope = cluster ? {} : { db: ctx.db }
    namespace = `${ctx.db}.$cmd.aggregate`
  } else {
    throw new CommandError(73, `Invalid namespace specified '${String(source)}'`)
  }
  const stream = new ChangeStreamCursor(log, { ...scope, stage, pipeline: rest })
  const batchSize = asNumber(asDoc(command.cursor).batchSize, DEFAULT_FIRST_BATCH)
  const firstBatch = batchSize === 0 ? [] : stream.collect(lookup(ctx), batchSize)
  let id = Long.ZERO
  if (!stream.finished) {
    id = ctx.newCursorId()
    log.track(stream)
    ctx.cursors.set(id.toString(), { id, namespace, documents: [], position: 0, lastUsed: Date.now(), changeStream: stream })
  }
  return { cursor: { firstBatch, postBatchResumeToken: stream.resumeToken, id, ns: namespace }, ok: 1 }
}

function normalizeIndex (raw: unknown): IndexSpec {
  const spec = asDoc(raw)
  const key = spec.key
  if (!isPlainObject(key) || Object.keys(key).length === 0) throw new CommandError(67, 'Index keys cannot be empty.')
  for (const [field, direction] of Object.entries(key)) {
    const valid = direction === 1 || direction === -1 || direction === 'hashed' || direction === 'text' || direction === '2dsphere'
    if (!valid) throw new CommandError(67, `Values in the index key pattern can only be 1, -1 or a string; found ${field}: ${String(direction)}`)
  }
  if (typeof spec.name !== 'string' || spec.name.length === 0) throw new CommandError(9, "The 'name' field is a required property of an index specification")
  const normalized: IndexSpec = { v: 2, key, name: spec.name }
  if (spec.unique === true) normalized.unique = true
  if (spec.sparse === true) normalized.sparse = true
  if (spec.partialFilterExpression !== undefined) {
    if (spec.sparse === true) throw new CommandError(67, 'cannot mix "partialFilterExpression" and "sparse" options')
    normalized.partialFilterExpression = asDoc(spec.partialFilterExpression)
  }
  if (spec.expireAfterSeconds !== undefined) {
    const seconds = asNumber(spec.expireAfterSeconds, NaN)
    if (!Number.isFinite(seconds) || seconds < 0) throw new CommandError(67, 'TTL index \'expireAfterSeconds\' option must be a non-negative number')
    if (Object.keys(key).length > 1) throw new CommandError(67, 'TTL indexes are single-field indexes, compound indexes do not support TTL.')
    normalized.expireAfterSeconds = seconds
  }
  return normalized
}

function sameOptions (a: IndexSpec, b: IndexSpec): boolean {
  const strip = ({ name: ignoredName, ...rest }: IndexSpec): string => keyOf(rest)
  return strip(a) === strip(b)
}

const createIndexes: Handler = (ctx, command) => {
  const name = collectionName(command, 'createIndexes')
  const existed = ctx.store.collection(ctx.db, name) !== undefined
  const collection = ctx.store.ensureCollection(ctx.db, name)
  const before = collection.indexSpecs().length
  const specs = (Array.isArray(command.indexes) ? command.indexes : []).map(normalizeIndex)
  for (const spec of specs) {
    const existing = collection.indexSpecs()
    const sameName = existing.find((other) => other.name === spec.name)
    if (sameName !== undefined) {
      if (keyOf(sameName.key) === keyOf(spec.key) && sameOptions(sameName, spec)) continue
      if (keyOf(sameName.key) !== keyOf(spec.key)) {
        throw new CommandError(86, `An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: ${JSON.stringify(spec)}, existing index: ${JSON.stringify(sameName)}`)
      }
      throw new CommandError(86, `An equivalent index already exists with the same name but different options. Requested index: ${JSON.stringify(spec)}, existing index: ${JSON.stringify(sameName)}`)
    }
    const sameKey = existing.find((other) => keyOf(other.key) === keyOf(spec.key) && keyOf(other.partialFilterExpression) === keyOf(spec.partialFilterExpression))
    if (sameKey !== undefined) {
      throw new CommandError(85, `Index already exists with a different name: ${sameKey.name}`)
    }
    if (spec.name === '_id_' || keyOf(spec.key) === keyOf({ _id: 1 })) continue
    collection.addIndex(spec)
    ctx.store.listener?.changed(collection)
  }
  const after = collection.indexSpecs().length
  const reply: Doc = { numIndexesBefore: before, numIndexesAfter: after, createdCollectionAutomatically: !existed }
  if (before === after) reply.note = 'all indexes already exist'
  reply.ok = 1
  return reply
}

function requireCollection (ctx: CommandContext, name: string): Collection {
  const collection = ctx.store.collection(ctx.db, name)
  if (collection === undefined) throw new CommandError(26, `ns does not exist: ${ctx.db}.${name}`)
  return collection
}

const listIndexes: Handler = (ctx, command) => {
  const name = collectionName(command, 'listIndexes')
  const collection = requireCollection(ctx, name)
  return batchReply(ctx, `${ctx.db}.${name}`, collection.indexSpecs() as unknown as Doc[], asNumber(asDoc(command.cursor).batchSize, DEFAULT_FIRST_BATCH), false)
}

const dropIndexes: Handler = (ctx, command) => {
  const name = collectionName(command, 'dropIndexes')
  const collection = requireCollection(ctx, name)
  const before = collection.indexSpecs().length
  const target = command.index
  let names: string[]
  if (target === '*') {
    names = [...collection.indexes.keys()]
  } else if (typeof target === 'string') {
    names = [target]
  } else if (Array.isArray(target)) {
    names = target.map(String)
  } else if (isPlainObject(target)) {
    const found = collection.indexSpecs().find((spec) => keyOf(spec.key) === keyOf(target))
    if (found === undefined) throw new CommandError(27, `can't find index with key: ${JSON.stringify(target)}`)
    names = [found.name]
  } else {
    throw new CommandError(14, 'index must be a string, an object or an array of strings')
  }
  for (const indexName of names) {
    if (indexName === '_id_') throw new CommandError(72, 'cannot drop _id index')
    if (!collection.indexes.has(indexName)) throw new CommandError(27, `index not found with name [${indexName}]`)
  }
  for (const indexName of names) collection.indexes.delete(indexName)
  ctx.store.listener?.changed(collection)
  return { nIndexesWas: before, ok: 1 }
}

const listCollections: Handler = (ctx, command) => {
  const collections = [...(ctx.store.databases.get(ctx.db)?.values() ?? [])]
  let entries: Doc[] = collections.map((collection) => ({
    name: collection.name,
    type: 'collection',
    options: collection.options,
    info: { readOnly: false },
    idIndex: { v: 2, key: { _id: 1 }, name: '_id_' }
  }))
  const filter = asDoc(command.filter)
  if (Object.keys(filter).length > 0) entries = new Query(filter, MINGO_OPTIONS).find(entries).all() as Doc[]
  if (command.nameOnly === true) entries = entries.map((entry) => ({ name: entry.name, type: entry.type }))
  return batchReply(ctx, `${ctx.db}.$cmd.listCollections`, entries, asNumber(asDoc(command.cursor).batchSize, DEFAULT_FIRST_BATCH), false)
}

// Fields any command may carry that are not options of the collection being created.
const COMMAND_ENVELOPE = new Set([
  'create', '$db', 'lsid', '$clusterTime', 'txnNumber', 'autocommit', 'startTransaction', 'writeConcern',
  'readConcern', '$readPreference', 'comment', 'maxTimeMS', 'apiVersion', 'apiStrict', 'apiDeprecationErrors'
])

const create: Handler = (ctx, command) => {
  const name = collectionName(command, 'create')
  if (ctx.store.collection(ctx.db, name) !== undefined) throw new CommandError(48, `Collection ${ctx.db}.${name} already exists.`)
  const options = Object.fromEntries(Object.entries(command).filter(([field]) => !COMMAND_ENVELOPE.has(field)))
  ctx.store.ensureCollection(ctx.db, name, options)
  return { ok: 1 }
}

const drop: Handler = (ctx, command) => {
  const name = collectionName(command, 'drop')
  const collection = ctx.store.dropCollection(ctx.db, name)
  // A change stream on the collection stays open to report the drop (and its invalidation).
  for (const [id, cursor] of ctx.cursors) if (cursor.namespace === `${ctx.db}.${name}` && cursor.changeStream === undefined) ctx.cursors.delete(id)
  if (collection !== undefined) ctx.store.changes?.record([{ operationType: 'drop', db: ctx.db, coll: name }])
  return collection === undefined ? { ok: 1 } : { nIndexesWas: collection.indexSpecs().length, ns: collection.namespace, ok: 1 }
}

const dropDatabase: Handler = (ctx) => {
  const names = [...(ctx.store.databases.get(ctx.db)?.keys() ?? [])]
  ctx.store.dropDatabase(ctx.db)
  // mongod drops each collection (a drop event each), then logs the database's drop.
  for (const name of names) ctx.store.changes?.record([{ operationType: 'drop', db: ctx.db, coll: name }])
  if (names.length > 0) ctx.store.changes?.record([{ operationType: 'dropDatabase', db: ctx.db }])
  return { dropped: ctx.db, ok: 1 }
}

const dbStats: Handler = (ctx) => {
  const collections = [...(ctx.store.databases.get(ctx.db)?.values() ?? [])]
  let objects = 0
  let dataSize = 0
  let indexes = 0
  for (const collection of collections) {
    objects += collection.docs.size
    indexes += collection.indexSpecs().length
    for (const document of collection.docs.values()) dataSize += calculateObjectSize(document)
  }
  return {
    db: ctx.db,
    collections: collections.length,
    views: 0,
    objects,
    avgObjSize: objects === 0 ? 0 : dataSize / objects,
    dataSize,
    storageSize: dataSize,
    indexes,
    indexSize: 0,
    totalSize: dataSize,
    scaleFactor: 1,
    ok: 1
  }
}

function splitNamespace (value: unknown, field: string): { db: string, name: string } {
  const text = typeof value === 'string' ? value : ''
  const dot = text.indexOf('.')
  if (dot <= 0 || dot === text.length - 1) throw new CommandError(73, `Invalid ${field} namespace: ${text}`)
  return { db: text.slice(0, dot), name: text.slice(dot + 1) }
}

const renameCollection: Handler = (ctx, command) => {
  const from = splitNamespace(command.renameCollection, 'source')
  const to = splitNamespace(command.to, 'target')
  const source = ctx.store.collection(from.db, from.name)
  if (source === undefined) throw new CommandError(26, 'Source collection does not exist')
  if (from.db === to.db && from.name === to.name) throw new CommandError(20, "Can't rename a collection to itself")
  if (ctx.store.collection(to.db, to.name) !== undefined) {
    if (command.dropTarget !== true) throw new CommandError(48, 'target namespace exists')
    ctx.store.dropCollection(to.db, to.name)
  }
  const target = ctx.store.ensureCollection(to.db, to.name, source.options)
  for (const index of source.indexes.values()) target.addIndex(index.spec)
  target.applyChanges([...source.docs].map(([id, document]) => ({ id, after: document })))
  ctx.store.dropCollection(from.db, from.name)
  ctx.store.listener?.changed(target)
  ctx.store.changes?.record([{ operationType: 'rename', db: from.db, coll: from.name, to: { db: to.db, coll: to.name } }])
  return { ok: 1 }
}

const collMod: Handler = (ctx, command) => {
  const collection = requireCollection(ctx, collectionName(command, 'collMod'))
  const reply: Doc = {}
  if (command.index !== undefined) {
    const change = asDoc(command.index)
    const index = [...collection.indexes.values()].find((candidate) =>
      (typeof change.name === 'string' && candidate.spec.name === change.name) ||
      (isPlainObject(change.keyPattern) && keyOf(candidate.spec.key) === keyOf(change.keyPattern)))
    if (index === undefined) throw new CommandError(27, `cannot find index ${JSON.stringify(change.name ?? change.keyPattern)} for ns ${collection.namespace}`)
    if (change.expireAfterSeconds !== undefined) {
      const seconds = asNumber(change.expireAfterSeconds, NaN)
      if (!Number.isFinite(seconds) || seconds < 0) throw new CommandError(2, 'expireAfterSeconds must be a non-negative number')
      if (index.spec.expireAfterSeconds === undefined) throw new CommandError(72, 'no expireAfterSeconds field to update')
      reply.expireAfterSeconds_old = index.spec.expireAfterSeconds
      reply.expireAfterSeconds_new = seconds
      index.spec.expireAfterSeconds = seconds
    }
    ctx.store.listener?.changed(collection)
  }
  reply.ok = 1
  return reply
}

const listDatabases: Handler = (ctx, command) => {
  let databases: Doc[] = [...ctx.store.databases.keys()].map((name) => ({ name, sizeOnDisk: 0, empty: false }))
  const filter = asDoc(command.filter)
  if (Object.keys(filter).length > 0) databases = new Query(filter, MINGO_OPTIONS).find(databases).all() as Doc[]
  if (command.nameOnly === true) databases = databases.map(({ name }) => ({ name }))
  return { databases, totalSize: 0, ok: 1 }
}

/** `explain` for reads: which index answered and how many documents were examined. */
const explain: Handler = (ctx, command) => {
  const inner = asDoc(command.explain)
  const kind = Object.keys(inner)[0] ?? ''
  if (!['find', 'count', 'distinct', 'aggregate'].includes(kind)) {
    throw new CommandError(2, `Explain is only supported here for find, count, distinct and aggregate, not '${kind}'`)
  }
  const name = collectionName(inner, kind)
  let filter: Doc = {}
  if (kind === 'find') filter = asDoc(inner.filter)
  else if (kind === 'count' || kind === 'distinct') filter = asDoc(inner.query)
  else if (Array.isArray(inner.pipeline) && isPlainObject(inner.pipeline[0]) && isPlainObject(inner.pipeline[0].$match)) filter = inner.pipeline[0].$match
  const stats: ScanStats = { examined: 0, index: undefined }
  const matched = ctx.store.find(ctx.db, name, filter, ctx.txn, stats)
  const nReturned = kind === 'find' ? runQuery(ctx, name, inner).length : matched.length
  const index = stats.index
  let winningPlan: Doc
  if (index === undefined) {
    winningPlan = { stage: 'COLLSCAN', filter, direction: 'forward' }
  } else if (index.name === '_id_') {
    winningPlan = { stage: 'IDHACK' }
  } else {
    winningPlan = {
      stage: 'FETCH',
      inputStage: {
        stage: 'IXSCAN',
        keyPattern: index.key,
        indexName: index.name,
        isUnique: index.unique === true,
        isSparse: index.sparse === true,
        isPartial: index.partialFilterExpression !== undefined,
        direction: 'forward'
      }
    }
  }
  return {
    explainVersion: '1',
    queryPlanner: { namespace: `${ctx.db}.${name}`, parsedQuery: filter, winningPlan, rejectedPlans: [] },
    executionStats: {
      executionSuccess: true,
      nReturned,
      executionTimeMillis: 0,
      totalKeysExamined: index === undefined ? 0 : stats.examined,
      totalDocsExamined: stats.examined,
      executionStages: winningPlan
    },
    command: inner,
    ok: 1
  }
}

export const dataCommands: Record<string, Handler> = {
  find,
  getMore,
  killCursors,
  insert,
  update,
  delete: remove,
  findAndModify,
  findandmodify: findAndModify,
  count,
  distinct,
  aggregate,
  createIndexes,
  listIndexes,
  dropIndexes,
  deleteIndexes: dropIndexes,
  listCollections,
  create,
  drop,
  dropDatabase,
  listDatabases,
  explain,
  dbStats,
  renameCollection,
  collMod
}
