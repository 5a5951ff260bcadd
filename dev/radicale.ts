// A real CalDAV server on this machine: Debian's Radicale (`apt-get install radicale`), on a
// 127.0.0.1 port, with its own storage folder and an htpasswd file of plain passwords. The local
// stack runs it with a demo account when it is installed; the CalDAV tests run it per test.
// It is no stand-in: the Sync service talks to it exactly as to iCloud or any other CalDAV server.
import { spawn, spawnSync } from 'node:child_process'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

export interface Radicale {
  /** The server's origin, e.g. http://127.0.0.1:5232 */
  url: string
  /** Sets (or changes) a user's password; Radicale reads the file on every request. */
  setPassword: (user: string, password: string) => Promise<void>
  /** Creates a calendar collection of the user (MKCALENDAR) and answers its URL. */
  createCalendar: (user: string, password: string, name: string, displayName?: string) => Promise<string>
  /** Another client writing straight to the server: PUT an .ics, answers the status and etag. */
  put: (url: string, user: string, password: string, ics: string, headers?: Record<string, string>) => Promise<{ status: number, etag: string | null }>
  get: (url: string, user: string, password: string) => Promise<{ status: number, etag: string | null, body: string }>
  close: () => Promise<void>
}

export interface RadicaleOptions {
  /** Where the collections and the password file live; kept across starts. */
  dataDir: string
  port: number
}

/** Why Radicale cannot run here, or null when it is installed. */
export function radicaleMissing (): string | null {
  const found = spawnSync('sh', ['-c', 'command -v radicale'], { encoding: 'utf8' })
  return found.status === 0 ? null : 'radicale is not installed (npm test installs it on Debian as root: apt-get install -y radicale)'
}

export function basic (user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
}

function parseUsers (text: string): Map<string, string> {
  const users = new Map<string, string>()
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':')
    if (colon > 0) users.set(line.slice(0, colon), line.slice(colon + 1))
  }
  return users
}

export async function startRadicale (options: RadicaleOptions): Promise<Radicale> {
  await mkdir(options.dataDir, { recursive: true })
  const htpasswd = join(options.dataDir, 'users')
  const passwords = parseUsers(await readFile(htpasswd, 'utf8').catch(() => ''))
  // Radicale reads the file again on every login: written in place, a login in between read it
  // empty or half-written and was refused (401, which a CalDAV client takes for a changed
  // password). A rename replaces it whole.
  const writeUsers = async (): Promise<void> => {
    const next = `${htpasswd}.next`
    await writeFile(next, [...passwords].map(([user, password]) => `${user}:${password}\n`).join(''), { mode: 0o600 })
    await rename(next, htpasswd)
  }
  await writeUsers()
  const config = join(options.dataDir, 'config')
  await writeFile(config, [
    '[server]', `hosts = 127.0.0.1:${options.port}`,
    '[auth]', 'type = htpasswd', `htpasswd_filename = ${htpasswd}`, 'htpasswd_encryption = plain', 'delay = 0',
    '[storage]', `filesystem_folder = ${join(options.dataDir, 'collections')}`,
    '[rights]', 'type = owner_only',
    '[logging]', 'level = warning',
    ''
  ].join('\n'))
  const child = spawn('radicale', ['--config', config], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const close = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  }
  const url = `http://127.0.0.1:${options.port}`
  const deadline = Date.now() + 15_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`radicale exited: ${stderr}`)
    try {
      await fetch(`${url}/.web/`, { signal: AbortSignal.timeout(1000) })
      break
    } catch {
      if (Date.now() > deadline) {
        await close()
        throw new Error(`radicale did not start: ${stderr}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  return {
    url,
    close,
    setPassword: async (user, password) => {
      passwords.set(user, password)
      await writeUsers()
    },
    createCalendar: async (user, password, name, displayName = name) => {
      const target = `${url}/${user}/${name}/`
      const response = await fetch(target, {
        method: 'MKCALENDAR',
        headers: { authorization: basic(user, password), 'content-type': 'application/xml' },
        body: `<?xml version="1.0"?><c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:set><d:prop><d:displayname>${displayName}</d:displayname></d:prop></d:set></c:mkcalendar>`
      })
      if (response.status !== 201) throw new Error(`MKCALENDAR answered ${response.status}: ${await response.text()}`)
      return target
    },
    put: async (target, user, password, ics, headers = {}) => {
      const response = await fetch(target, { method: 'PUT', headers: { authorization: basic(user, password), 'content-type': 'text/calendar', ...headers }, body: ics })
      await response.arrayBuffer()
      return { status: response.status, etag: response.headers.get('etag') }
    },
    get: async (target, user, password) => {
      const response = await fetch(target, { headers: { authorization: basic(user, password) } })
      return { status: response.status, etag: response.headers.get('etag'), body: await response.text() }
    }
  }
}
