// A MongoDB wire-protocol server for tests and the local stack. The real `mongodb` driver talks
// to it over TCP as it would to mongod; see README.md in this folder for what it covers.
import { createServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import { randomBytes } from 'node:crypto'
import { Long, ObjectId } from 'bson'
import { dataCommands } from './commands.js'
import type { CommandContext, CursorState, Handler } from './commands.js'
import { CommandError } from './errors.js'
import { Store } from './store.js'
import type { Transaction } from './store.js'
import { MessageReader, encodeMsg, encodeReply, parseMessage } from './wire.js'
import type { Doc } from './values.js'

export interface StartMongoOptions {
  /** TCP port on 127.0.0.1; 0 (the default) picks a free one. */
  port?: number
  /** Replica-set name: the server then presents itself as the primary of a one-member set. */
  replicaSet?: string
  /** Directory where data is kept across restarts; in memory only when absent. */
  dataDir?: string
  /** Users created at start, for SCRAM-SHA-256 authentication. */
  users?: MongoUser[]
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
const SERVER_VERSION = '7.0.0'

interface Connection {
  id: number
  socket: Socket
}

interface SessionState {
  txnNumber: number
  txn: Transaction | undefined
}

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

export async function startMongo (options: StartMongoOptions = {}): Promise<MongoStandIn> {
  if (process.env.NODE_ENV === 'production') {
    throw new Error('dev/mongo is a development stand-in for MongoDB and refuses to run with NODE_ENV=production; use a real MongoDB server')
  }
  const store = new Store()
  const cursors = new Map<string, CursorState>()
  const sessions = new Map<string, SessionState>()
  const connections = new Set<Connection>()
  const electionId = new ObjectId('7fffffff0000000000000001')
  let nextConnectionId = 1
  let nextCursor = randomBytes(4).readUInt32BE(0) + 1
  let port = 0

  const newCursorId = (): Long => Long.fromNumber(nextCursor++)

  function hello (command: Doc): Doc {
    const legacy = command.hello === undefined
    const reply: Doc = {}
    if (command.helloOk === true || !legacy) reply.helloOk = true
    reply[legacy ? 'ismaster' : 'isWritablePrimary'] = true
    if (options.replicaSet !== undefined) {
      const me = `127.0.0.1:${port}`
      Object.assign(reply, {
        hosts: [me],
        setName: options.replicaSet,
        setVersion: 1,
        secondary: false,
        primary: me,
        me,
        electionId,
        lastWrite: { lastWriteDate: new Date() }
      })
    }
    Object.assign(reply, {
      maxBsonObjectSize: 16 * 1024 * 1024,
      maxMessageSizeBytes: 48_000_000,
      maxWriteBatchSize: 100_000,
      localTime: new Date(),
      logicalSessionTimeoutMinutes: 30,
      connectionId: 0,
      minWireVersion: 0,
      maxWireVersion: MAX_WIRE_VERSION,
      readOnly: false,
      ok: 1
    })
    return reply
  }

  const serverCommands: Record<string, Handler> = {
    hello: (_ctx, command) => hello(command),
    isMaster: (_ctx, command) => hello(command),
    ismaster: (_ctx, command) => hello(command),
    ping: () => ({ ok: 1 }),
    buildInfo: () => ({ version: SERVER_VERSION, versionArray: [7, 0, 0, 0], gitVersion: 'dev-mongo', bits: 64, maxBsonObjectSize: 16 * 1024 * 1024, ok: 1 }),
    buildinfo: () => ({ version: SERVER_VERSION, versionArray: [7, 0, 0, 0], bits: 64, ok: 1 }),
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
    if (options.replicaSet === undefined) {
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
      state = { txnNumber, txn: store.begin(txnNumber, (expired) => store.abort(expired)) }
      sessions.set(key, state)
      return state.txn
    }
    const txn = state?.txn
    if (state === undefined || txn === undefined || state.txnNumber !== txnNumber) {
      throw new CommandError(251, `Transaction with { txnNumber: ${txnNumber} } has been aborted.`, {}, ['TransientTransactionError'])
    }
    if (txn.state === 'aborted') {
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
      const txn = resolveTransaction(name, command)
      if (txn !== undefined && !TRANSACTION_COMMANDS.has(name)) {
        throw new CommandError(263, `Cannot run '${name}' in a multi-document transaction.`)
      }
      const ctx: CommandContext = { store, db, txn, connectionId: connection.id, cursors, newCursorId, replicaSet: options.replicaSet }
      return await handler(ctx, command)
    } catch (error) {
      if (error instanceof CommandError) return error.toReply()
      const message = error instanceof Error ? error.message : String(error)
      return new CommandError(2, message).toReply()
    }
  }

  function serve (socket: Socket): void {
    const connection: Connection = { id: nextConnectionId++, socket }
    connections.add(connection)
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
      connections.delete(connection)
    })
  }

  const server = createServer(serve)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  port = (server.address() as AddressInfo).port
  const query = options.replicaSet === undefined ? '' : `?replicaSet=${encodeURIComponent(options.replicaSet)}`
  const uri = `mongodb://127.0.0.1:${port}/${query}`

  let closed = false
  return {
    uri,
    port,
    async close () {
      if (closed) return
      closed = true
      for (const txn of [...store.active]) store.abort(txn)
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const connection of connections) connection.socket.destroy()
      await stopped
    }
  }
}
