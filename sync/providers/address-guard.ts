// The one way Sync reaches an address a user supplied (a CalDAV server URL and every href its
// answers name): the name is resolved here and the connection goes to the address that was
// checked, so a name that resolves elsewhere a moment later (DNS rebinding) changes nothing.
// Loopback, private, link-local, carrier-grade NAT, multicast, unspecified, reserved, and IPv6
// unique-local, link-local, mapped and NAT64 addresses are refused unless the operator listed the
// host or its network in `sync.privateAddressAllowlist` (a CalDAV server on their own network).
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { BlockList, isIP } from 'node:net'
import { Agent } from 'undici'

/** The address is not one Sync may reach for a user. */
export class AddressRefusedError extends Error {
  override name = 'AddressRefusedError'
}

const REFUSED = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) REFUSED.addSubnet(network, prefix, 'ipv4')
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['::ffff:0:0', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 32], ['2001:db8::', 32],
  ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8]
] as const) REFUSED.addSubnet(network, prefix, 'ipv6')

export interface AddressPolicy {
  /** Whether Sync may connect to `address`, reached through the name `host`. */
  permits: (host: string, address: string) => boolean
}

/**
 * The policy of `allowlist`: each entry a host name (as written in a server URL), an address, or
 * a network in CIDR notation (`10.1.0.0/16`, `fd00::/8`).
 */
export function addressPolicy (allowlist: readonly string[] = []): AddressPolicy {
  const hosts = new Set<string>()
  const allowed = new BlockList()
  for (const entry of allowlist) {
    const [network, prefix] = entry.split('/')
    const family = isIP(network ?? '')
    if (family === 0) hosts.add(entry.toLowerCase())
    else if (prefix === undefined) allowed.addAddress(network as string, family === 4 ? 'ipv4' : 'ipv6')
    else allowed.addSubnet(network as string, Number(prefix), family === 4 ? 'ipv4' : 'ipv6')
  }
  return {
    permits: (host, address) => {
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
      if (hosts.has(host.toLowerCase()) || allowed.check(address, family)) return true
      return !REFUSED.check(address, family)
    }
  }
}

/** A URL's host as net.connect takes it (an IPv6 literal without its brackets). */
function bareHost (url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1')
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/**
 * A dispatcher whose connections go only to addresses the policy permits. Names are resolved by
 * its own lookup (the answer checked is the address connected to); an address written in the URL
 * is never looked up, so `checkUrl` checks it before the request goes.
 */
export function guardedDispatcher (policy: AddressPolicy, options: { keepAliveTimeout?: number } = {}): Agent {
  const lookup = (hostname: string, lookupOptions: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
      if (error !== null) {
        callback(error, [])
        return
      }
      const permitted = addresses.filter((entry) => policy.permits(hostname, entry.address))
      if (permitted.length === 0) {
        callback(new AddressRefusedError(`${hostname} resolves only to addresses Sync does not reach for a user`), [])
        return
      }
      if (lookupOptions.all === true) callback(null, permitted)
      else callback(null, (permitted[0] as LookupAddress).address, (permitted[0] as LookupAddress).family)
    })
  }
  return new Agent({ keepAliveTimeout: options.keepAliveTimeout ?? 4_000, connect: { lookup } })
}

/** Refuses a URL that is not http(s), carries credentials, or names an address the policy refuses. */
export function checkUrl (policy: AddressPolicy, url: URL): void {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AddressRefusedError(`${url.protocol} is not http or https`)
  if (url.username !== '' || url.password !== '') throw new AddressRefusedError('a URL with a user name or password in it')
  const host = bareHost(url)
  if (isIP(host) !== 0 && !policy.permits(host, host)) throw new AddressRefusedError(`${host} is not an address Sync reaches for a user`)
}
