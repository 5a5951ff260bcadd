// Users, SCRAM-SHA-256 (RFC 5802 / RFC 7677) as mongod speaks it over saslStart/saslContinue,
// and the built-in roles that decide which commands a user may run on which database.
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto'
import { CommandError } from './errors.js'

export interface Role { role: string, db: string }

export interface StoredUser {
  user: string
  db: string
  roles: Role[]
  salt: string
  iterations: number
  storedKey: string
  serverKey: string
}

// mongod's default scramSHA256IterationCount.
const ITERATIONS = 15_000
const NONCE_BYTES = 24

function hmac (key: Buffer, text: string): Buffer {
  return createHmac('sha256', key).update(text).digest()
}

function sha256 (data: Buffer): Buffer {
  return createHash('sha256').update(data).digest()
}

function saltedPassword (password: string, salt: Buffer, iterations: number): Buffer {
  // SASLprep; NFKC normalisation is what it amounts to for the passwords this server meets.
  return pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256')
}

export function makeUser (user: string, db: string, password: string, roles: Role[]): StoredUser {
  const salt = randomBytes(28)
  const salted = saltedPassword(password, salt, ITERATIONS)
  return {
    user,
    db,
    roles,
    salt: salt.toString('base64'),
    iterations: ITERATIONS,
    storedKey: sha256(hmac(salted, 'Client Key')).toString('base64'),
    serverKey: hmac(salted, 'Server Key').toString('base64')
  }
}

export class Users {
  readonly #users = new Map<string, StoredUser>()
  // Keys answers for unknown users so that they look like known ones until the proof fails.
  readonly #decoySecret = randomBytes(32)

  get size (): number {
    return this.#users.size
  }

  get (db: string, user: string): StoredUser | undefined {
    return this.#users.get(`${db}.${user}`)
  }

  add (stored: StoredUser): void {
    this.#users.set(`${stored.db}.${stored.user}`, stored)
  }

  remove (db: string, user: string): boolean {
    return this.#users.delete(`${db}.${user}`)
  }

  all (): StoredUser[] {
    return [...this.#users.values()]
  }

  decoy (db: string, user: string): StoredUser {
    const seed = hmac(this.#decoySecret, `${db}.${user}`)
    return { user, db, roles: [], salt: seed.subarray(0, 28).toString('base64'), iterations: ITERATIONS, storedKey: randomBytes(32).toString('base64'), serverKey: randomBytes(32).toString('base64') }
  }
}

function authenticationFailed (): CommandError {
  return new CommandError(18, 'Authentication failed.')
}

function attributes (message: string): Map<string, string> {
  const map = new Map<string, string>()
  for (const part of message.split(',')) {
    const eq = part.indexOf('=')
    if (eq > 0) map.set(part.slice(0, eq), part.slice(eq + 1))
  }
  return map
}

function decodeName (name: string): string {
  return name.replace(/=2C/g, ',').replace(/=3D/g, '=')
}

/** One SCRAM-SHA-256 exchange on one connection. */
export class ScramConversation {
  readonly #users: Users
  readonly #db: string
  #stored: StoredUser | undefined
  #known = false
  #clientFirstBare = ''
  #serverFirst = ''
  #nonce = ''
  #verified: StoredUser | undefined
  #done = false

  constructor (users: Users, db: string) {
    this.#users = users
    this.#db = db
  }

  /** client-first-message in, server-first-message out. */
  start (payload: Buffer): Buffer {
    const message = payload.toString('utf8')
    if (!message.startsWith('n,')) throw new CommandError(2, 'SCRAM channel binding is not supported')
    const bareStart = message.indexOf(',', 2)
    this.#clientFirstBare = message.slice(bareStart + 1)
    const fields = attributes(this.#clientFirstBare)
    const user = decodeName(fields.get('n') ?? '')
    const clientNonce = fields.get('r')
    if (user === '' || clientNonce === undefined || clientNonce === '') throw authenticationFailed()
    const stored = this.#users.get(this.#db, user)
    this.#known = stored !== undefined
    this.#stored = stored ?? this.#users.decoy(this.#db, user)
    this.#nonce = clientNonce + randomBytes(NONCE_BYTES).toString('base64')
    this.#serverFirst = `r=${this.#nonce},s=${this.#stored.salt},i=${this.#stored.iterations}`
    return Buffer.from(this.#serverFirst)
  }

  /** client-final-message in, server-final-message out; throws when the proof is wrong. */
  finish (payload: Buffer): Buffer {
    const stored = this.#stored
    if (stored === undefined) throw authenticationFailed()
    const message = payload.toString('utf8')
    const proofAt = message.lastIndexOf(',p=')
    if (proofAt < 0) throw authenticationFailed()
    const withoutProof = message.slice(0, proofAt)
    const fields = attributes(withoutProof)
    if (fields.get('r') !== this.#nonce || fields.get('c') !== 'biws') throw authenticationFailed()
    const proof = Buffer.from(message.slice(proofAt + 3), 'base64')
    const authMessage = `${this.#clientFirstBare},${this.#serverFirst},${withoutProof}`
    const storedKey = Buffer.from(stored.storedKey, 'base64')
    const signature = hmac(storedKey, authMessage)
    if (proof.length !== signature.length) throw authenticationFailed()
    const clientKey = Buffer.alloc(proof.length)
    for (let i = 0; i < proof.length; i++) clientKey[i] = (proof[i] as number) ^ (signature[i] as number)
    const matches = timingSafeEqual(sha256(clientKey), storedKey)
    if (!matches || !this.#known) throw authenticationFailed()
    this.#verified = stored
    this.#done = true
    return Buffer.from(`v=${hmac(Buffer.from(stored.serverKey, 'base64'), authMessage).toString('base64')}`)
  }

  get done (): boolean {
    return this.#done
  }

  get user (): StoredUser | undefined {
    return this.#verified
  }
}

// replicaSetConfigure and replicaSetStatus are mongod's replSetConfigure and replSetGetStatus actions.
type Action = 'read' | 'write' | 'collectionAdmin' | 'databaseAdmin' | 'userAdmin' | 'cluster' | 'replicaSetConfigure' | 'replicaSetStatus'

// What each built-in role allows, on its own database or (for the *AnyDatabase roles) on all.
const ROLE_ACTIONS: Record<string, { actions: Action[], anyDatabase: boolean }> = {
  read: { actions: ['read'], anyDatabase: false },
  readWrite: { actions: ['read', 'write', 'collectionAdmin'], anyDatabase: false },
  dbAdmin: { actions: ['collectionAdmin', 'databaseAdmin'], anyDatabase: false },
  userAdmin: { actions: ['userAdmin'], anyDatabase: false },
  dbOwner: { actions: ['read', 'write', 'collectionAdmin', 'databaseAdmin', 'userAdmin'], anyDatabase: false },
  readAnyDatabase: { actions: ['read'], anyDatabase: true },
  readWriteAnyDatabase: { actions: ['read', 'write', 'collectionAdmin'], anyDatabase: true },
  dbAdminAnyDatabase: { actions: ['collectionAdmin', 'databaseAdmin'], anyDatabase: true },
  userAdminAnyDatabase: { actions: ['userAdmin'], anyDatabase: true },
  // The cluster roles exist on admin only, which is what anyDatabase checks.
  clusterMonitor: { actions: ['replicaSetStatus'], anyDatabase: true },
  clusterManager: { actions: ['replicaSetConfigure', 'replicaSetStatus'], anyDatabase: true },
  clusterAdmin: { actions: ['replicaSetConfigure', 'replicaSetStatus', 'cluster'], anyDatabase: true },
  root: { actions: ['read', 'write', 'collectionAdmin', 'databaseAdmin', 'userAdmin', 'cluster', 'replicaSetConfigure', 'replicaSetStatus'], anyDatabase: true }
}

export const KNOWN_ROLES = new Set(Object.keys(ROLE_ACTIONS))

// Commands anyone may run before authenticating, as on mongod.
const PUBLIC = new Set(['hello', 'isMaster', 'ismaster', 'ping', 'buildInfo', 'buildinfo', 'saslStart', 'saslContinue', 'connectionStatus', 'endSessions', 'logout'])

const COMMAND_ACTIONS: Record<string, Action> = {
  find: 'read',
  getMore: 'read',
  killCursors: 'read',
  count: 'read',
  distinct: 'read',
  aggregate: 'read',
  listIndexes: 'read',
  listCollections: 'read',
  explain: 'read',
  dbStats: 'read',
  insert: 'write',
  update: 'write',
  delete: 'write',
  findAndModify: 'write',
  findandmodify: 'write',
  create: 'collectionAdmin',
  drop: 'collectionAdmin',
  createIndexes: 'collectionAdmin',
  dropIndexes: 'collectionAdmin',
  deleteIndexes: 'collectionAdmin',
  dropDatabase: 'databaseAdmin',
  collMod: 'databaseAdmin',
  renameCollection: 'collectionAdmin',
  createUser: 'userAdmin',
  dropUser: 'userAdmin',
  setParameter: 'cluster',
  getParameter: 'cluster',
  replSetInitiate: 'replicaSetConfigure',
  replSetGetStatus: 'replicaSetStatus'
}

function roleAllows (roles: Role[], action: Action, db: string): boolean {
  return roles.some((role) => {
    const grant = ROLE_ACTIONS[role.role]
    if (grant === undefined || !grant.actions.includes(action)) return false
    return grant.anyDatabase ? role.db === 'admin' : role.db === db
  })
}

export function canSeeDatabase (roles: Role[], db: string): boolean {
  return roles.some((role) => {
    const grant = ROLE_ACTIONS[role.role]
    return grant !== undefined && (grant.anyDatabase ? role.db === 'admin' : role.db === db)
  })
}

/**
 * Throws code 13 when `user` (undefined: not authenticated) may not run `command` on `db`.
 * Commands with no listed action (transactions, sessions, listDatabases) need only a login.
 */
export function authorize (user: StoredUser | undefined, name: string, db: string): void {
  if (PUBLIC.has(name)) return
  if (user === undefined) throw new CommandError(13, `Command ${name} requires authentication`)
  const action = COMMAND_ACTIONS[name]
  if (action === undefined) return
  if (!roleAllows(user.roles, action, db)) {
    throw new CommandError(13, `not authorized on ${db} to execute command { ${name}: ... }`)
  }
}
