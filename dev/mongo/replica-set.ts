// The server's replica-set side: the one member of a set named at start, as mongod started with
// `--replSet NAME`. Either already initiated (and primary), or waiting for `replSetInitiate` as a
// fresh mongod does: see README.md, "Replica set before rs.initiate()", for the documented
// behaviour this follows.
import { readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ObjectId } from 'bson'
import { CommandError } from './errors.js'
import { isPlainObject } from './values.js'
import type { Doc } from './values.js'

/** STARTUP: no config yet; SECONDARY: initiated, the election not yet won; PRIMARY. */
export type MemberState = 'STARTUP' | 'SECONDARY' | 'PRIMARY'

const STATE_CODES: Record<MemberState, number> = { STARTUP: 0, SECONDARY: 2, PRIMARY: 1 }

// A one-member set elects itself at once on mongod, yet not within the replSetInitiate reply:
// clients must wait for isWritablePrimary, so the stand-in makes them wait too.
const ELECTION_DELAY_MS = 300

// Commands that write, so only a primary runs them (mongod: NotWritablePrimary, "not primary").
const NEEDS_PRIMARY = new Set([
  'insert', 'update', 'delete', 'findAndModify', 'findandmodify', 'create', 'drop', 'createIndexes',
  'dropIndexes', 'deleteIndexes', 'dropDatabase', 'collMod', 'renameCollection', 'createUser', 'dropUser',
  'commitTransaction', 'abortTransaction'
])

// Reads a secondary serves when the client opts in ($readPreference other than primary), and a
// member without a config (state STARTUP) serves never.
const READS = new Set([
  'find', 'getMore', 'count', 'distinct', 'aggregate', 'listIndexes', 'listCollections', 'explain',
  'dbStats', 'listDatabases'
])

interface StoredConfig { _id: string, version: number, members: Array<{ _id: number, host: string }> }

export class ReplicaSetMember {
  readonly name: string
  readonly electionId = new ObjectId('7fffffff0000000000000001')
  #state: MemberState
  #config: StoredConfig | undefined
  #port = 0
  readonly #configFile: string | undefined
  #election: NodeJS.Timeout | undefined

  constructor (name: string, initiated: boolean, dataDir: string | undefined) {
    this.name = name
    this.#state = initiated ? 'PRIMARY' : 'STARTUP'
    // mongod keeps the config in local.system.replset, so a restarted member is still initiated.
    this.#configFile = dataDir === undefined ? undefined : join(dataDir, 'replset.json')
  }

  /** Reads a config kept by an earlier run; called once the data directory is claimed. */
  async load (): Promise<void> {
    if (this.#configFile === undefined) return
    const text = await readFile(this.#configFile, 'utf8').catch(() => undefined)
    if (text === undefined) return
    const kept = JSON.parse(text) as StoredConfig
    if (kept._id !== this.name) throw new Error(`the data directory belongs to replica set "${kept._id}", not "${this.name}"`)
    this.#config = kept
    this.#state = 'PRIMARY'
  }

  listening (port: number): void {
    this.#port = port
    this.#config ??= this.#state === 'STARTUP' ? undefined : this.#defaultConfig()
  }

  get state (): MemberState {
    return this.#state
  }

  get initiated (): boolean {
    return this.#state !== 'STARTUP'
  }

  #defaultConfig (): StoredConfig {
    return { _id: this.name, version: 1, members: [{ _id: 0, host: `127.0.0.1:${this.#port}` }] }
  }

  get #me (): string {
    return this.#config?.members[0]?.host ?? `127.0.0.1:${this.#port}`
  }

  /** The replica-set fields of a hello reply, in the shape mongod gives them in this state. */
  helloFields (legacy: boolean): Doc {
    const writable = legacy ? 'ismaster' : 'isWritablePrimary'
    if (this.#state === 'STARTUP') {
      return { [writable]: false, secondary: false, info: 'Does not have a valid replica set config', isreplicaset: true }
    }
    const me = this.#me
    const fields: Doc = {
      [writable]: this.#state === 'PRIMARY',
      hosts: [me],
      setName: this.name,
      setVersion: this.#config?.version ?? 1,
      secondary: this.#state === 'SECONDARY'
    }
    if (this.#state === 'PRIMARY') Object.assign(fields, { primary: me, me, electionId: this.electionId })
    else fields.me = me
    fields.lastWrite = { lastWriteDate: new Date() }
    return fields
  }

  /** Refuses a command this member's state cannot run, with mongod's codes and messages. */
  admit (name: string, command: Doc): void {
    if (this.#state === 'PRIMARY') return
    if (NEEDS_PRIMARY.has(name)) throw new CommandError(10107, 'not primary')
    if (!READS.has(name)) return
    const readPreference = command.$readPreference
    const secondaryOk = isPlainObject(readPreference) && readPreference.mode !== undefined && readPreference.mode !== 'primary'
    if (!secondaryOk) throw new CommandError(13435, 'not primary and secondaryOk=false')
    if (this.#state === 'STARTUP') throw new CommandError(13436, 'node is not in primary or recovering state')
  }

  /** `replSetInitiate`: validates the config as mongod does, then becomes primary shortly after. */
  async initiate (db: string, argument: unknown): Promise<Doc> {
    if (db !== 'admin') throw new CommandError(13, 'replSetInitiate may only be run against the admin database.')
    if (this.initiated) throw new CommandError(23, 'already initialized', { info: 'try querying local.system.replset to see current configuration' })
    const reply: Doc = {}
    let config: StoredConfig
    if (!isPlainObject(argument) || Object.keys(argument).length === 0) {
      // As rs.initiate() with no argument: a set of this node alone.
      reply.info2 = 'no configuration specified. Using a default configuration for the set'
      config = this.#defaultConfig()
    } else {
      config = this.#validate(argument)
    }
    this.#config = config
    this.#state = 'SECONDARY'
    if (this.#configFile !== undefined) {
      const staging = `${this.#configFile}.tmp`
      await writeFile(staging, JSON.stringify(config))
      await rename(staging, this.#configFile)
    }
    this.#election = setTimeout(() => { this.#state = 'PRIMARY' }, ELECTION_DELAY_MS)
    this.#election.unref()
    reply.ok = 1
    return reply
  }

  #validate (config: Doc): StoredConfig {
    if (typeof config._id !== 'string') throw new CommandError(93, 'Missing expected field "_id"')
    if (config._id !== this.name) {
      throw new CommandError(93, `Rejecting initiate with a set name that differs from command line set name, initiate set name: ${config._id}, command line set name: ${this.name}`)
    }
    const members = config.members
    if (!Array.isArray(members) || members.length === 0) throw new CommandError(93, 'Replica set configuration must contain at least one member')
    const parsed = members.map((member: unknown, index) => {
      if (!isPlainObject(member) || typeof member._id !== 'number' || typeof member.host !== 'string') {
        throw new CommandError(93, `Expected members.${index} to be an object with a numeric _id and a host string`)
      }
      return { _id: member._id, host: member.host.includes(':') ? member.host : `${member.host}:27017` }
    })
    const self = [`127.0.0.1:${this.#port}`, `localhost:${this.#port}`]
    const version = typeof config.version === 'number' ? config.version : 1
    if (!parsed.some((member) => self.includes(member.host))) {
      throw new CommandError(74, `No host described in new configuration with {version: ${version}, term: 0} for replica set ${this.name} maps to this node`)
    }
    if (parsed.length > 1) {
      // The stand-in is one process: the other members could never answer the quorum check.
      const others = parsed.filter((member) => !self.includes(member.host)).map((member) => member.host)
      throw new CommandError(74, `replSetInitiate quorum check failed because not all proposed set members responded affirmatively: ${others.join(', ')} failed with Connection refused`)
    }
    return { _id: this.name, version, members: parsed }
  }

  /** `replSetGetStatus`, reduced to the fields a client needs to see the member's state. */
  status (): Doc {
    if (!this.initiated) throw new CommandError(94, 'no replset config has been received', { info: 'run rs.initiate(...) if not yet done for the set' })
    return {
      set: this.name,
      date: new Date(),
      myState: STATE_CODES[this.#state],
      members: [{ _id: this.#config?.members[0]?._id ?? 0, name: this.#me, health: 1, state: STATE_CODES[this.#state], stateStr: this.#state, self: true }],
      ok: 1
    }
  }

  close (): void {
    clearTimeout(this.#election)
  }
}
