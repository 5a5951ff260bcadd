// Keeps databases in a data directory: one BSON file of documents and one JSON file of options
// and indexes per collection, plus the users. Changes are written shortly after they happen
// (write to a temporary file, then rename) and on close.
import { mkdir, readFile, readdir, rename, rm, unlink, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { EJSON, deserialize, serialize } from 'bson'
import type { Collection, IndexSpec } from './collection.js'
import type { Store, StoreListener } from './store.js'
import type { StoredUser, Users } from './auth.js'
import { keyOf } from './values.js'
import type { Doc } from './values.js'

// How long a change may wait before it is on disk; a crash loses at most this much. When writing
// takes long (large collections are rewritten whole), the wait grows to keep the disk load bounded.
const FLUSH_DELAY_MS = 200
const FLUSH_LOAD_FACTOR = 5

interface Meta { options: Doc, indexes: IndexSpec[] }

function encode (name: string): string {
  return encodeURIComponent(name).replace(/\./g, '%2E')
}

async function writeAtomically (path: string, data: Uint8Array | string, mode = 0o644): Promise<void> {
  const temporary = `${path}.tmp`
  await writeFile(temporary, data, { mode })
  await rename(temporary, path)
}

// Directories claimed by servers of this process (the lock file names the process, not the server).
const claimed = new Set<string>()

function isRunning (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

export class Persistence implements StoreListener {
  readonly #dir: string
  readonly #store: Store
  readonly #users: Users
  readonly #dirty = new Set<Collection>()
  readonly #dropped = new Set<string>()
  #usersDirty = false
  #timer: NodeJS.Timeout | undefined
  #writing: Promise<void> = Promise.resolve()
  #closed = false
  #delay = FLUSH_DELAY_MS

  constructor (dir: string, store: Store, users: Users) {
    this.#dir = dir
    this.#store = store
    this.#users = users
  }

  /**
   * Claims the directory (like mongod.lock): a second server on the same directory would overwrite
   * the first one's files. A lock left by a process that no longer runs is taken over.
   */
  async #lock (): Promise<void> {
    const path = join(this.#dir, 'mongod.lock')
    if (claimed.has(resolve(this.#dir))) throw new Error(`the data directory ${this.#dir} is in use by another server in this process`)
    const holder = Number(await readFile(path, 'utf8').catch(() => ''))
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isRunning(holder)) {
      throw new Error(`the data directory ${this.#dir} is in use by process ${holder}`)
    }
    await writeFile(path, String(process.pid))
    claimed.add(resolve(this.#dir))
  }

  async load (): Promise<void> {
    await mkdir(this.#dir, { recursive: true })
    await this.#lock()
    for (const entry of await readdir(this.#dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue
      const db = decodeURIComponent(entry.name)
      const folder = join(this.#dir, entry.name)
      for (const file of await readdir(folder)) {
        if (!file.endsWith('.meta.json')) continue
        const base = file.slice(0, -'.meta.json'.length)
        const meta = EJSON.parse(await readFile(join(folder, file), 'utf8'), { relaxed: false }) as Meta
        const collection = this.#store.ensureCollection(db, decodeURIComponent(base), meta.options)
        for (const spec of meta.indexes) collection.addIndex(spec)
        const data = await readFile(join(folder, `${base}.bson`)).catch(() => Buffer.alloc(0))
        let offset = 0
        const changes = []
        while (offset + 4 <= data.length) {
          const size = data.readInt32LE(offset)
          const document = deserialize(data.subarray(offset, offset + size))
          changes.push({ id: keyOf(document._id), after: document })
          offset += size
        }
        collection.applyChanges(changes)
      }
    }
    const users = await readFile(join(this.#dir, 'users.json'), 'utf8').catch(() => undefined)
    if (users !== undefined) for (const user of JSON.parse(users) as StoredUser[]) this.#users.add(user)
    this.#dirty.clear()
  }

  changed (collection: Collection): void {
    this.#dirty.add(collection)
    this.#schedule()
  }

  dropped (db: string, name: string): void {
    for (const collection of this.#dirty) {
      if (collection.db === db && collection.name === name) this.#dirty.delete(collection)
    }
    this.#dropped.add(join(encode(db), encode(name)))
    this.#schedule()
  }

  usersChanged (): void {
    this.#usersDirty = true
    this.#schedule()
  }

  #schedule (): void {
    if (this.#timer !== undefined || this.#closed) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      this.flush().catch((error: unknown) => {
        process.stderr.write(`dev/mongo: could not write the data directory: ${String(error)}\n`)
      })
    }, this.#delay)
    this.#timer.unref()
  }

  /** The last flush: nothing is written to the directory after it. */
  async close (): Promise<void> {
    await this.flush()
    this.#closed = true
    await unlink(join(this.#dir, 'mongod.lock')).catch(() => {})
    claimed.delete(resolve(this.#dir))
  }

  /** Writes every pending change; the snapshot is taken synchronously, so it is consistent. */
  async flush (): Promise<void> {
    clearTimeout(this.#timer)
    this.#timer = undefined
    const dropped = [...this.#dropped]
    this.#dropped.clear()
    const snapshots = [...this.#dirty].map((collection) => ({
      folder: join(this.#dir, encode(collection.db)),
      base: encode(collection.name),
      meta: EJSON.stringify({ options: collection.options, indexes: [...collection.indexes.values()].map((index) => index.spec) }, { relaxed: false }),
      data: Buffer.concat([...collection.docs.values()].map((document) => serialize(document)))
    }))
    this.#dirty.clear()
    const users = this.#usersDirty ? JSON.stringify(this.#users.all()) : undefined
    this.#usersDirty = false
    const previous = this.#writing
    this.#writing = (async () => {
      await previous
      const started = Date.now()
      for (const path of dropped) {
        await rm(join(this.#dir, `${path}.meta.json`), { force: true })
        await rm(join(this.#dir, `${path}.bson`), { force: true })
      }
      for (const snapshot of snapshots) {
        await mkdir(snapshot.folder, { recursive: true })
        await writeAtomically(join(snapshot.folder, `${snapshot.base}.bson`), snapshot.data)
        await writeAtomically(join(snapshot.folder, `${snapshot.base}.meta.json`), snapshot.meta)
      }
      // SCRAM keys are not passwords, but still only for the owner's eyes.
      if (users !== undefined) await writeAtomically(join(this.#dir, 'users.json'), users, 0o600)
      this.#delay = Math.max(FLUSH_DELAY_MS, (Date.now() - started) * FLUSH_LOAD_FACTOR)
    })()
    await this.#writing
  }
}
