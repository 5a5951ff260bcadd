// A MongoDB wire-protocol server for tests and the local stack. The real `mongodb` driver talks
// to it over TCP as it would to mongod; see README.md in this folder for what it covers.
import { refuseProduction } from '../stand-in/index.js'
import { createServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import { randomBytes } from 'node:crypto'
import { Binary, Long } from 'bson'
import { KNOWN_ROLES, ScramConversation, Users, authorize, canSeeDatabase, makeUser } from './auth.js'
import type { Role, StoredUser } from './auth.js'
import { ChangeLog } from './change-streams.js'
import { dataCommands } from './commands.js'
import type { CommandContext, CursorState, Handler } from './commands.js'
import { CommandError } from './errors.js'
import { Persistence } from './persist.js'
import { ReplicaSetMember } from './replica-set.js'
import { LockWait, Store } from './store.js'
import type { Transaction } from './store.js'
import { pathValues } from './values.js'
import { MessageReader, encodeMsg, encodeReply, parseMessage } from './wire.js'
import type { Doc } from './values.js'

export interface StartMongoOptions {
  /** TCP port on 127.0.0.1; 0 (the default) picks a free one. */
  port?: number
  /**
   * Replica-set name: the server then presents itself as the primary of a one-member set. With
   * `{ name, initiated: false }` it is a mongod started with `--replSet NAME` before
   * `rs.initiate()`: no primary until a `replSetInitiate` names this set and this node.
   */
  replicaSet?: string | { name: string, initiated: boolean }
  /** Directory where data is kept across restarts; in memory only when absent. */
  dataDir?: string
  /** Users created at start, for SCRAM-SHA-256 authentication. */
  users?: MongoUser[]
  /**
   * Replica set only: how many operations the change history keeps for resuming change streams
   * (mongod's oplog window, which it sizes in bytes); 10 000 by default. Resuming from a point
   * older than that fails with 286 ChangeStreamHistoryLost.
   */
  changeStreamHistory?: number
}

export interface MongoUser {
  user: string
  password: string
  /** Database the user is defined in (its authSource); `admin` when absent. */
  db?: string
  roles: Array<{ role: string, db: string }>
}

export interface MongoStandIn {
  uri: string
  port: number
  close (): Promise<void>
}

const MAX_WIRE_VERSION = 21
// mongod's default ttlMonitorSleepSecs; tests shorten it with setParameter, as they would on mongod.
const DEFAULT_TTL_SLEEP_SECS = 60
const SERVER_VERSION = '7.0.0'

interface Connection {
  id: number
  socket: Socket
  user: StoredUser | undefined
  conversation: ScramConversation | undefined
  skipEmptyExchange: boolean
}

interface SessionState {
  txnNumber: number
  txn: Transaction | undefined
  lastUsed: number
}

// mongod's logicalSessionTimeoutMinutes: a session unused this long is forgotten.
const SESSION_TIMEOUT_MS = 30 * 60_000

// Commands that may run inside a multi-document transaction, as on mongod.
const TRANSACTION_COMMANDS = new Set([
  'find', 'getMore', 'killCursors', 'insert', 'update', 'delete', 'findAndModify', 'findandmodify',
  'aggregate', 'distinct', 'create', 'createIndexes', 'commitTransaction', 'abortTransaction'
])

function sessionKey (lsid: unknown): string | undefined {
  if (typeof lsid !== 'object' || lsid === null) return undefined
  const id = (lsid as { id?: { toString: (encoding: string) => string } }).id
  return id === undefined ? undefined : id.toString('hex')
}

function toNumber (value: unknown): number | undefined {
  if (typeof value === 'number') return value
  if (value instanceof Long) return value.toNumber()
  return undefined
}

function binaryBuffer (value: unknown): Buffer {
  if (value instanceof Binary) return Buffer.from(value.buffer)
  if (value instanceof Uint8Array) return Buffer.from(value)
  throw new CommandError(2, 'payload must be binary data')
}

function parseRoles (raw: unknown, db: string): Role[] {
  if (!Array.isArray(raw)) throw new CommandError(2, '"createUser" command requires a "roles" array')
  return raw.map((entry: unknown) => {
    const role = typeof entry === 'string' ? { role: entry, db } : (entry as Partial<Role>)
    if (typeof role.role !== 'string' || typeof role.db !== 'string' || !KNOWN_ROLES.has(role.role)) {
      throw new CommandError(31, `Could not find role: ${String(role.role)}@${String(role.db ?? db)}`)
    }
    return { role: role.role, db: role.db }
  })
}

export async function startMongo (options: StartMongoOptions = {}): Promise<MongoStandIn> {
  refuseProduction('dev/mongo')
  const store = new Store()
  const users = new Users()
  const persistence = options.dataDir === undefined ? undefined : new Persistence(options.dataDir, store, users)
  if (persistence !== undefined) {
    await persistence.load()
    store.listener = persistence
  }
  for (const user of options.users ?? []) {
    users.add(makeUser(user.user, user.db ?? 'admin', user.password, parseRoles(user.roles, user.db ?? 'admin')))
  }
  if ((options.users ?? []).length > 0) persistence?.usersChanged()
  // As with mongod --auth: access control is on when the server starts with users.
  const authEnabled = users.size > 0
  const replicaSetOption = typeof options.replicaSet === 'string' ? { name: options.replicaSet, initiated: true } : options.replicaSet
  const replicaSet = replicaSetOption === undefined ? undefined : new ReplicaSetMember(replicaSetOption.name, replicaSetOption.initiated, options.dataDir)
  // Change streams read the oplog, which only a replica-set member keeps.
  if (replicaSet !== undefined) store.changes = new ChangeLog(options.changeStreamHistory)
  try {
    await replicaSet?.load()
  } catch (error) {
    // Give the data directory back: it stays usable with the right set name.
    await persistence?.close()
    throw error
  }

  const cursors = new Map<string, CursorState>()
  const sessions = new Map<string, SessionState>()
  const connections = new Map<number, Connection>()
  let nextConnectionId = 1
  let nextCursor = randomBytes(4).readUInt32BE(0) + 1
  let port = 0
  let ttlSleepSecs = DEFAULT_TTL_SLEEP_SECS
  let ttlTimer: NodeJS.Timeout | undefined

  const newCursorId = (): Long => Long.fromNumber(nextCursor++)

  function connectionOf (ctx: CommandContext): Connection {
    const connection = connections.get(ctx.connectionId)
    if (connection === undefined) throw new CommandError(2, 'connection closed')
    return connection
  }

  function startConversation (connection: Connection, command: Doc, db: string): Doc {
    if (command.mechanism !== 'SCRAM-SHA-256') {
      throw new CommandError(334, `Received authentication for mechanism ${String(command.mechanism)} which is not enabled`)
    }
    const conversation = new ScramConversation(users, db)
    const payload = conversation.start(binaryBuffer(command.payload))
    connection.conversation = conversation
    const saslOptions = command.options
    connection.skipEmptyExchange = typeof saslOptions === 'object' && saslOptions !== null && (saslOptions as Doc).skipEmptyExchange === true
    return { conversationId: 1, done: false, payload: new Binary(payload) }
  }

  function hello (connection: Connection, command: Doc): Doc {
    const legacy = command.hello === undefined
    const reply: Doc = {}
    if (command.helloOk === true || !legacy) reply.helloOk = true
    if (replicaSet === undefined) reply[legacy ? 'ismaster' : 'isWritablePrimary'] = true
    else Object.assign(reply, replicaSet.helloFields(legacy))
    Object.assign(reply, {
      maxBsonObjectSize: 16 * 1024 * 1024,
      maxMessageSizeBytes: 48_000_000,
      maxWriteBatchSize: 100_000,
      localTime: new Date(),
      logicalSessionTimeoutMinutes: 30,
      connectionId: connection.id,
      minWireVersion: 0,
      maxWireVersion: MAX_WIRE_VERSION,
      readOnly: false
    })
    if (typeof command.saslSupportedMechs === 'string') {
      const dot = command.saslSupportedMechs.indexOf('.')
      const known = users.get(command.saslSupportedMechs.slice(0, dot), command.saslSupportedMechs.slice(dot + 1))
      if (known !== undefined) reply.saslSupportedMechs = ['SCRAM-SHA-256']
    }
    const speculative = command.speculativeAuthenticate
    if (typeof speculative === 'object' && speculative !== null && (speculative as Doc).mechanism === 'SCRAM-SHA-256') {
      try {
        const db = (speculative as Doc).db
        reply.speculativeAuthenticate = startConversation(connection, speculative as Doc, typeof db === 'string' ? db : 'admin')
      } catch {
        // The driver falls back to an ordinary saslStart when no speculative reply comes.
      }
    }
    reply.ok = 1
    return reply
  }

  const buildInfo: Handler = () => ({
    version: SERVER_VERSION, versionArray: [7, 0, 0, 0], gitVersion: 'dev-mongo', bits: 64, debug: false, maxBsonObjectSize: 16 * 1024 * 1024, ok: 1
  })

  function sweepExpired (): void {
    const now = Date.now()
    // mongod's cursorTimeoutMillis: a cursor left alone for ten minutes is closed.
    for (const [id, cursor] of cursors) {
      if (now - cursor.lastUsed <= 600_000 || cursor.changeStream?.waitingOn !== undefined) continue
      cursor.changeStream?.kill()
      cursors.delete(id)
    }
    for (const [key, state] of sessions) {
      if (now - state.lastUsed <= SESSION_TIMEOUT_MS) continue
      if (state.txn !== undefined) store.abort(state.txn)
      sessions.delete(key)
    }
    for (const collections of store.databases.values()) {
      for (const collection of collections.values()) {
        for (const index of collection.indexes.values()) {
          const seconds = index.spec.expireAfterSeconds
          const field = index.fields[0]
          if (seconds === undefined || field === undefined) continue
          for (const [id, document] of [...collection.docs]) {
            const dates = pathValues(document, field).filter((value): value is Date => value instanceof Date)
            if (dates.length === 0 || Math.min(...dates.map((date) => date.getTime())) + seconds * 1000 > now) continue
            try {
              store.write(collection, [{ id, before: document }])
            } catch (error) {
              // A document locked by an open transaction waits for the next pass.
              if (!(error instanceof LockWait)) throw error
            }
          }
        }
      }
    }
  }

  function scheduleSweep (): void {
    clearInterval(ttlTimer)
    ttlTimer = setInterval(sweepExpired, ttlSleepSecs * 1000)
    ttlTimer.unref()
  }

  const serverCommands: Record<string, Handler> = {
    hello: (ctx, command) => hello(connectionOf(ctx), command),
    isMaster: (ctx, command) => hello(connectionOf(ctx), command),
    ismaster: (ctx, command) => hello(connectionOf(ctx), command),
    ping: () => ({ ok: 1 }),
    buildInfo,
    buildinfo: buildInfo,
    saslStart: (ctx, command) => ({ ...startConversation(connectionOf(ctx), command, ctx.db), ok: 1 }),
    saslContinue: (ctx, command) => {
      const connection = connectionOf(ctx)
      const conversation = connection.conversation
      if (conversation === undefined) throw new CommandError(17, 'No SASL session state found')
      if (conversation.done) {
        connection.conversation = undefined
        return { conversationId: 1, done: true, payload: new Binary(Buffer.alloc(0)), ok: 1 }
      }
      try {
        const payload = conversation.finish(binaryBuffer(command.payload))
        connection.user = conversation.user
        if (connection.skipEmptyExchange) connection.conversation = undefined
        return { conversationId: 1, done: connection.skipEmptyExchange, payload: new Binary(payload), ok: 1 }
      } catch (error) {
        connection.conversation = undefined
        throw error
      }
    },
    logout: (ctx) => {
      connectionOf(ctx).user = undefined
      return { ok: 1 }
    },
    connectionStatus: (ctx) => {
      const user = connectionOf(ctx).user
      return {
        authInfo: {
          authenticatedUsers: user === undefined ? [] : [{ user: user.user, db: user.db }],
          authenticatedUserRoles: user === undefined ? [] : user.roles
        },
        ok: 1
      }
    },
    createUser: (ctx, command) => {
      const name = command.createUser
      if (typeof name !== 'string' || name === '') throw new CommandError(2, 'User name must be a non-empty string')
      if (typeof command.pwd !== 'string' || command.pwd === '') throw new CommandError(2, 'Must provide a \'pwd\' field for all user documents, except those with \'$external\' as the user\'s source db')
      if (users.get(ctx.db, name) !== undefined) throw new CommandError(51003, `User "${name}@${ctx.db}" already exists`)
      users.add(makeUser(name, ctx.db, command.pwd, parseRoles(command.roles, ctx.db)))
      persistence?.usersChanged()
      return { ok: 1 }
    },
    dropUser: (ctx, command) => {
      const name = String(command.dropUser)
      if (!users.remove(ctx.db, name)) throw new CommandError(11, `User '${name}@${ctx.db}' not found`)
      persistence?.usersChanged()
      return { ok: 1 }
    },
    setParameter: (_ctx, command) => {
      const reply: Doc = {}
      if (command.ttlMonitorSleepSecs !== undefined) {
        const seconds = Number(command.ttlMonitorSleepSecs)
        if (!Number.isInteger(seconds) || seconds < 1) throw new CommandError(2, 'ttlMonitorSleepSecs must be a positive integer')
        reply.was = ttlSleepSecs
        ttlSleepSecs = seconds
        scheduleSweep()
      } else {
        throw new CommandError(2, 'unrecognized parameter')
      }
      reply.ok = 1
      return reply
    },
    getParameter: (_ctx, command) => {
      if (command.ttlMonitorSleepSecs === undefined) throw new CommandError(72, 'no option found to get')
      return { ttlMonitorSleepSecs: ttlSleepSecs, ok: 1 }
    },
    listDatabases: async (ctx, command) => {
      const reply = await (dataCommands.listDatabases as Handler)(ctx, command)
      const user = connectionOf(ctx).user
      if (authEnabled && user !== undefined) {
        reply.databases = (reply.databases as Doc[]).filter((entry) => canSeeDatabase(user.roles, String(entry.name)))
      }
      return reply
    },
    endSessions: (_ctx, command) => {
      for (const lsid of Array.isArray(command.endSessions) ? command.endSessions : []) {
        const key = sessionKey(lsid)
        if (key === undefined) continue
        const state = sessions.get(key)
        if (state?.txn !== undefined) store.abort(state.txn)
        sessions.delete(key)
      }
      return { ok: 1 }
    },
    replSetInitiate: async (ctx, command) => {
      if (replicaSet === undefined) throw new CommandError(76, 'This node was not started with replication enabled.')
      return await replicaSet.initiate(ctx.db, command.replSetInitiate)
    },
    replSetGetStatus: () => {
      if (replicaSet === undefined) throw new CommandError(76, 'not running with --replSet')
      return replicaSet.status()
    },
    commitTransaction: (ctx) => {
      const txn = ctx.txn
      if (txn === undefined) throw new CommandError(251, 'Given transaction number does not match any in-progress transactions.', {}, ['TransientTransactionError'])
      if (txn.state === 'active') store.commit(txn)
      return { ok: 1 }
    },
    abortTransaction: (ctx) => {
      const txn = ctx.txn
      if (txn === undefined || txn.state !== 'active') throw new CommandError(251, 'Given transaction number does not match any in-progress transactions.', {}, ['TransientTransactionError'])
      store.abort(txn)
      return { ok: 1 }
    }
  }
  const handlers: Record<string, Handler> = { ...dataCommands, ...serverCommands }

  /** Finds the transaction a command belongs to, starting one when asked (replica set only). */
  function resolveTransaction (name: string, command: Doc): Transaction | undefined {
    const txnNumber = toNumber(command.txnNumber)
    if (txnNumber === undefined) return undefined
    if (replicaSet === undefined) {
      throw new CommandError(20, 'Transaction numbers are only allowed on a replica set member or mongos')
    }
    // Retryable writes carry a txnNumber without autocommit; they run as ordinary writes.
    if (command.autocommit !== false) return undefined
    const key = sessionKey(command.lsid)
    if (key === undefined) throw new CommandError(50768, 'Transaction requires a session id')
    let state = sessions.get(key)
    if (command.startTransaction === true) {
      if (state !== undefined && txnNumber < state.txnNumber) {
        throw new CommandError(225, `Cannot start transaction ${txnNumber} on session because a newer transaction ${state.txnNumber} has already started`)
      }
      if (state?.txn !== undefined) store.abort(state.txn)
      const txn = store.begin(txnNumber, (expired) => store.abort(expired))
      txn.lsid = command.lsid
      state = { txnNumber, txn, lastUsed: Date.now() }
      sessions.set(key, state)
      return state.txn
    }
    if (state !== undefined) state.lastUsed = Date.now()
    const txn = state?.txn
    if (state === undefined || txn === undefined || state.txnNumber !== txnNumber || txn.state === 'aborted') {
      throw new CommandError(251, `Transaction with { txnNumber: ${txnNumber} } has been aborted.`, {}, ['TransientTransactionError'])
    }
    if (txn.state === 'committed' && name !== 'commitTransaction') {
      throw new CommandError(256, `Transaction with { txnNumber: ${txnNumber} } has been committed.`)
    }
    return txn
  }

  async function runCommand (connection: Connection, command: Doc, fallbackDb: string): Promise<Doc> {
    const name = Object.keys(command)[0] ?? ''
    const db = typeof command.$db === 'string' ? command.$db : fallbackDb
    try {
      const handler = handlers[name]
      if (handler === undefined) throw new CommandError(59, `no such command: '${name}'`)
      if (authEnabled) {
        // renameCollection runs on admin but acts on the database named in its source namespace.
        const source = name === 'renameCollection' && typeof command.renameCollection === 'string' ? command.renameCollection.split('.')[0] : undefined
        authorize(connection.user, name, source ?? db)
      }
      replicaSet?.admit(name, command)
      const txn = resolveTransaction(name, command)
      if (txn !== undefined && !TRANSACTION_COMMANDS.has(name)) {
        throw new CommandError(263, `Cannot run '${name}' in a multi-document transaction.`)
      }
      const ctx: CommandContext = { store, db, txn, connectionId: connection.id, cursors, newCursorId }
      return await handler(ctx, command)
    } catch (error) {
      if (error instanceof CommandError) return error.toReply()
      const message = error instanceof Error ? error.message : String(error)
      return new CommandError(2, message).toReply()
    }
  }

  function serve (socket: Socket): void {
    const connection: Connection = { id: nextConnectionId++, socket, user: undefined, conversation: undefined, skipEmptyExchange: false }
    connections.set(connection.id, connection)
    const reader = new MessageReader()
    let queue = Promise.resolve()
    socket.setNoDelay(true)
    socket.on('data', (chunk) => {
      let messages: Buffer[]
      try {
        messages = reader.push(chunk)
      } catch {
        socket.destroy()
        return
      }
      for (const raw of messages) {
        // Replies on one connection go out in request order, as the driver expects.
        queue = queue.then(async () => {
          const message = parseMessage(raw)
          if (message.kind === 'query') {
            const db = message.collection.split('.')[0] ?? 'admin'
            const reply = await runCommand(connection, message.command, db)
            if (!socket.destroyed) socket.write(encodeReply(0, message.requestId, reply))
            return
          }
          const reply = await runCommand(connection, message.command, 'admin')
          if (!message.moreToCome && !socket.destroyed) socket.write(encodeMsg(0, message.requestId, reply))
        }).catch(() => { socket.destroy() })
      }
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      connections.delete(connection.id)
      // A getMore waiting on a change stream for a client that left is interrupted, and mongod
      // kills the cursor of an interrupted getMore.
      for (const [id, cursor] of cursors) {
        if (cursor.changeStream?.waitingOn !== connection.id) continue
        cursor.changeStream.kill()
        cursors.delete(id)
      }
    })
  }

  const server = createServer(serve)
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.port ?? 0, '127.0.0.1', () => {
        server.off('error', reject)
        resolve()
      })
    })
  } catch (error) {
    // Give the data directory back, so a retry on another port can use it.
    await persistence?.close()
    throw error
  }
  port = (server.address() as AddressInfo).port
  replicaSet?.listening(port)
  scheduleSweep()
  // Before initiation no server is a member of the set, so a client must connect to this one directly.
  const query = replicaSet === undefined ? '' : replicaSet.initiated ? `?replicaSet=${encodeURIComponent(replicaSet.name)}` : '?directConnection=true'
  const uri = `mongodb://127.0.0.1:${port}/${query}`

  let closed = false
  return {
    uri,
    port,
    async close () {
      if (closed) return
      closed = true
      clearInterval(ttlTimer)
      replicaSet?.close()
      store.changes?.close()
      cursors.clear()
      for (const txn of [...store.active]) store.abort(txn)
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const connection of connections.values()) connection.socket.destroy()
      await stopped
      await persistence?.close()
    }
  }
}
