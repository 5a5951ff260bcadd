// What every development stand-in of this repository shares: it never runs in production, its
// command line reads numbers the same way, and it serves on the loopback address only.
import type { FastifyInstance } from 'fastify'

export const LOOPBACK = '127.0.0.1'

/** Stand-ins exist for development and tests; a production process must reach the real service. */
export function refuseProduction (what: string): void {
  if (process.env['NODE_ENV'] === 'production') {
    throw new Error(`${what} is a development stand-in and refuses to start when NODE_ENV is production`)
  }
}

/** A numeric command-line flag: absent, or a whole number from 0 up to `max`. */
export function wholeNumberFlag (value: string | undefined, flag: string, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (value === undefined) return undefined
  const parsed = Number(value)
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > max) throw new Error(`--${flag} must be a whole number from 0 to ${max}, got "${value}"`)
  return parsed
}

/** Listens on the loopback address (port 0: any free one) and answers the base URL; closes the app if it cannot. */
export async function listenOnLoopback (app: FastifyInstance, port: number | undefined, what: string): Promise<string> {
  try {
    await app.listen({ host: LOOPBACK, port: port ?? 0 })
  } catch (err) {
    await app.close()
    throw err
  }
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error(`${what} did not bind a TCP port`)
  return `http://${LOOPBACK}:${address.port}`
}
