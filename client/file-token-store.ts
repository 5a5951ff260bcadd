// A token store for Node programs (the CLI): one JSON file that only its owner can read (0600, in a
// 0700 folder), written whole through a temporary file and a rename so a crash never leaves half
// a token. The file names the API it belongs to: tokens of one backend are never sent to another.
// The folder must be the user's own and closed to others, and the temporary file gets a random
// name and is created exclusively: nobody else who can write there can catch the tokens with a
// file or a link prepared in advance.
import { randomBytes } from 'node:crypto'
import { lstat, mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { SessionTokens, TokenStore } from './tokens.js'

interface TokenFile {
  apiUrl: string
  tokens: SessionTokens
}

function isTokens (value: unknown): value is SessionTokens {
  const tokens = value as Partial<SessionTokens> | null
  return typeof tokens?.accessToken === 'string' && typeof tokens.refreshToken === 'string' && typeof tokens.frontToken === 'string'
}

/** The folder is a real folder of this user that nobody else may write to; otherwise nothing is saved. */
async function checkFolder (folder: string): Promise<void> {
  const info = await lstat(folder)
  if (!info.isDirectory()) throw new Error(`the token folder ${folder} is not a folder (a link?): tokens are not saved there`)
  if (typeof process.getuid === 'function' && info.uid !== process.getuid()) throw new Error(`the token folder ${folder} belongs to another user: tokens are not saved there`)
  if ((info.mode & 0o022) !== 0) throw new Error(`others may write to the token folder ${folder} (mode ${(info.mode & 0o777).toString(8)}): tokens are not saved there`)
}

export class FileTokenStore implements TokenStore {
  constructor (readonly path: string, readonly apiUrl: string) {}

  async load (): Promise<SessionTokens | null> {
    let text: string
    try {
      text = await readFile(this.path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
    try {
      const file = JSON.parse(text) as Partial<TokenFile>
      return file.apiUrl === this.apiUrl && isTokens(file.tokens) ? file.tokens : null
    } catch {
      return null
    }
  }

  async save (tokens: SessionTokens): Promise<void> {
    const folder = dirname(this.path)
    await mkdir(folder, { recursive: true, mode: 0o700 })
    await checkFolder(folder)
    const temporary = `${this.path}.${randomBytes(12).toString('hex')}.tmp`
    const file: TokenFile = { apiUrl: this.apiUrl, tokens }
    // 'wx': created here and now, never an existing file or a link someone left in its place.
    const handle = await open(temporary, 'wx', 0o600)
    try {
      await handle.writeFile(`${JSON.stringify(file)}\n`)
    } finally {
      await handle.close()
    }
    await rename(temporary, this.path)
  }

  async clear (): Promise<void> {
    await rm(this.path, { force: true })
  }
}
