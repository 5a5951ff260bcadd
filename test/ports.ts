import { createServer } from 'node:net'
import { readFileSync } from 'node:fs'

/**
 * The kernel's range for the source ports of outgoing connections (and for `listen(0)`). A port
 * from it, found free and handed to a child process, can be taken meanwhile by any connection the
 * busy test machine opens, and the child then fails with EADDRINUSE. Ports are therefore drawn from
 * below that range, where the kernel never assigns one by itself.
 */
function lowestEphemeralPort (): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    if (Number.isInteger(low)) return low
  } catch {
    // Not Linux: its usual range.
  }
  return 32768
}

const LOWEST = 20_000
const HIGHEST = Math.max(LOWEST + 1000, lowestEphemeralPort() - 1)

async function isFree (port: number): Promise<boolean> {
  const probe = createServer()
  return await new Promise((resolve) => {
    probe.once('error', () => { resolve(false) })
    probe.listen(port, '127.0.0.1', () => { probe.close(() => { resolve(true) }) })
  })
}

/**
 * A TCP port nothing listens on right now, for a child process to take: drawn at random (test
 * files run in parallel processes, each drawing its own) outside the kernel's ephemeral range.
 */
export async function freePort (): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = LOWEST + Math.floor(Math.random() * (HIGHEST - LOWEST))
    if (await isFree(port)) return port
  }
  throw new Error(`no free port between ${LOWEST} and ${HIGHEST}`)
}
