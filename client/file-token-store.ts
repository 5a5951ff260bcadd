// A token store for Node programs (the CLI): one JSON file that only its owner can read (0600, in a
// 0700 folder), written whole through a temporary file and a rename so a crash never leaves half
// a token. The file names the API it belongs to: tokens of one backend are never sent to another.
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
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
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 })
    const temporary = `${this.path}.${process.pid}.tmp`
    const file: TokenFile = { apiUrl: this.apiUrl, tokens }
    await writeFile(temporary, `${JSON.stringify(file)}\n`, { mode: 0o600 })
    // The mode given to writeFile applies only to a new file.
    await chmod(temporary, 0o600)
    await rename(temporary, this.path)
  }

  async clear (): Promise<void> {
    await rm(this.path, { force: true })
  }
}
