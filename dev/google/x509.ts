// A minimal self-signed X.509 v3 certificate for an RSA key, DER-encoded by hand.
//
// Google publishes its ID-token signing keys twice: as a JWK set (`/oauth2/v3/certs`) and as PEM
// certificates keyed by `kid` (`/oauth2/v1/certs`). google-auth-library's `verifyIdToken` reads the
// PEM form when it runs in Node, so the stand-in serves real certificates too. Node can parse
// certificates but not create them, and no certificate library is a dependency, so this file
// writes the few ASN.1 structures a certificate needs.
import { createPublicKey, randomBytes, sign } from 'node:crypto'
import type { KeyObject } from 'node:crypto'

function encodeLength (length: number): Buffer {
  if (length < 0x80) return Buffer.from([length])
  const bytes: number[] = []
  for (let rest = length; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff)
  return Buffer.from([0x80 | bytes.length, ...bytes])
}

function tlv (tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), encodeLength(content.length), content])
}

const sequence = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items))
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items))
const nullValue = (): Buffer => Buffer.from([0x05, 0x00])
const utf8String = (text: string): Buffer => tlv(0x0c, Buffer.from(text, 'utf8'))
const bitString = (content: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), content]))
const explicit = (tagNumber: number, content: Buffer): Buffer => tlv(0xa0 | tagNumber, content)

/** A positive INTEGER: a leading zero byte keeps a set high bit from reading as negative. */
function positiveInteger (bytes: Buffer): Buffer {
  let start = 0
  while (start < bytes.length - 1 && bytes[start] === 0) start++
  const trimmed = bytes.subarray(start)
  return tlv(0x02, (trimmed[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed)
}

function objectIdentifier (dotted: string): Buffer {
  const parts = dotted.split('.').map(Number)
  const [first = 0, second = 0, ...rest] = parts
  const bytes: number[] = [first * 40 + second]
  for (const part of rest) {
    const chunk: number[] = []
    let value = part
    do {
      chunk.unshift(value & 0x7f)
      value = Math.floor(value / 128)
    } while (value > 0)
    for (let i = 0; i < chunk.length - 1; i++) chunk[i] = (chunk[i] ?? 0) | 0x80
    bytes.push(...chunk)
  }
  return tlv(0x06, Buffer.from(bytes))
}

/** UTCTime (YYMMDDHHMMSSZ), valid for the years 1950 to 2049, which is all a test key needs. */
function utcTime (date: Date): Buffer {
  const iso = date.toISOString()
  const text = iso.slice(2, 4) + iso.slice(5, 7) + iso.slice(8, 10) + iso.slice(11, 13) + iso.slice(14, 16) + iso.slice(17, 19) + 'Z'
  return tlv(0x17, Buffer.from(text, 'ascii'))
}

const SHA256_WITH_RSA = '1.2.840.113549.1.1.11'
const COMMON_NAME = '2.5.4.3'

/** A PEM certificate for `privateKey`'s public half, signed by itself, valid from `notBefore` for `days`. */
export function selfSignedCertificate (privateKey: KeyObject, commonName: string, notBefore: Date, days: number): string {
  const algorithm = sequence(objectIdentifier(SHA256_WITH_RSA), nullValue())
  const name = sequence(set(sequence(objectIdentifier(COMMON_NAME), utf8String(commonName))))
  const notAfter = new Date(notBefore.getTime() + days * 24 * 60 * 60 * 1000)
  const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' })
  const tbs = sequence(
    explicit(0, positiveInteger(Buffer.from([2]))), // version 3
    positiveInteger(randomBytes(16)),
    algorithm,
    name,
    sequence(utcTime(notBefore), utcTime(notAfter)),
    name,
    spki
  )
  const signature = sign('sha256', tbs, privateKey)
  const der = sequence(tbs, algorithm, bitString(signature))
  const lines = der.toString('base64').match(/.{1,64}/g) ?? []
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`
}
