// A real CalDAV server for the tests: Debian's Radicale on a free 127.0.0.1 port, with its own
// storage folder and an htpasswd file of plain passwords, stopped when the test ends.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { freePort } from '../helper.js'

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
}

/** Why the CalDAV tests cannot run here, or null when Radicale is installed. */
export function radicaleMissing (): string | null {
  const found = spawnSync('sh', ['-c', 'command -v radicale'], { encoding: 'utf8' })
  return found.status === 0 ? null : 'radicale is not installed (apt-get install -y radicale, as .ci/run does)'
}

export function basic (user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
}

export async function startRadicale (t: Test): Promise<Radicale> {
  const folder = await mkdtemp(join(tmpdir(), 'radicale-'))
  t.teardown(() => rm(folder, { recursive: true, force: true }))
  const port = await freePort()
  const htpasswd = join(folder, 'users')
  const passwords = new Map<string, string>()
  const writeUsers = async () => { await writeFile(htpasswd, [...passwords].map(([user, password]) => `${user}:${password}\n`).join('')) }
  await writeUsers()
  const config = join(folder, 'config')
  await writeFile(config, [
    '[server]', `hosts = 127.0.0.1:${port}`,
    '[auth]', 'type = htpasswd', `htpasswd_filename = ${htpasswd}`, 'htpasswd_encryption = plain', 'delay = 0',
    '[storage]', `filesystem_folder = ${join(folder, 'collections')}`,
    '[rights]', 'type = owner_only',
    '[logging]', 'level = warning',
    ''
  ].join('\n'))
  const child = spawn('radicale', ['--config', config], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  t.teardown(async () => {
    if (child.exitCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  })
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 15_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`radicale exited: ${stderr}`)
    try {
      await fetch(`${url}/.web/`, { signal: AbortSignal.timeout(1000) })
      break
    } catch {
      if (Date.now() > deadline) throw new Error(`radicale did not start: ${stderr}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  return {
    url,
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
