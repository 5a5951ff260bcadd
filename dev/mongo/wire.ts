// MongoDB wire protocol framing: the legacy OP_QUERY/OP_REPLY pair used only for the first
// handshake of a connection, and OP_MSG for everything after it.
import { deserialize, serialize, Long } from 'bson'
import type { Document } from 'bson'

const OP_REPLY = 1
const OP_QUERY = 2004
const OP_MSG = 2013

const HEADER_SIZE = 16
const FLAG_CHECKSUM_PRESENT = 1
const FLAG_MORE_TO_COME = 2
// A generous ceiling: mongod accepts 48 MB messages and advertises that size in its handshake.
const MAX_MESSAGE_SIZE = 48_000_000

export interface QueryMessage {
  kind: 'query'
  requestId: number
  collection: string
  command: Document
}

export interface CommandMessage {
  kind: 'msg'
  requestId: number
  moreToCome: boolean
  command: Document
}

class ProtocolError extends Error {}

function readCString (buffer: Buffer, start: number): { value: string, end: number } {
  const nul = buffer.indexOf(0, start)
  if (nul < 0) throw new ProtocolError('unterminated C string')
  return { value: buffer.toString('utf8', start, nul), end: nul + 1 }
}

function readDocument (buffer: Buffer, start: number): { document: Document, end: number } {
  if (start + 4 > buffer.length) throw new ProtocolError('truncated document')
  const size = buffer.readInt32LE(start)
  if (size < 5 || start + size > buffer.length) throw new ProtocolError('bad document size')
  const document = deserialize(buffer.subarray(start, start + size), { validation: { utf8: false } })
  return { document, end: start + size }
}

/** Parses one whole message (header included). */
export function parseMessage (message: Buffer): QueryMessage | CommandMessage {
  const requestId = message.readInt32LE(4)
  const opCode = message.readInt32LE(12)
  if (opCode === OP_QUERY) {
    const collection = readCString(message, HEADER_SIZE + 4)
    // numberToSkip and numberToReturn follow the collection name; a command ignores them.
    const { document } = readDocument(message, collection.end + 8)
    return { kind: 'query', requestId, collection: collection.value, command: document }
  }
  if (opCode !== OP_MSG) throw new ProtocolError(`unsupported opCode ${opCode}`)

  const flags = message.readUInt32LE(HEADER_SIZE)
  const end = (flags & FLAG_CHECKSUM_PRESENT) !== 0 ? message.length - 4 : message.length
  let offset = HEADER_SIZE + 4
  let body: Document | undefined
  const sequences: Array<[string, Document[]]> = []
  while (offset < end) {
    const sectionKind = message.readUInt8(offset)
    offset += 1
    if (sectionKind === 0) {
      const read = readDocument(message, offset)
      body = read.document
      offset = read.end
    } else if (sectionKind === 1) {
      const sectionEnd = offset + message.readInt32LE(offset)
      const identifier = readCString(message, offset + 4)
      const documents: Document[] = []
      let position = identifier.end
      while (position < sectionEnd) {
        const read = readDocument(message, position)
        documents.push(read.document)
        position = read.end
      }
      sequences.push([identifier.value, documents])
      offset = sectionEnd
    } else {
      throw new ProtocolError(`unknown OP_MSG section kind ${sectionKind}`)
    }
  }
  if (body === undefined) throw new ProtocolError('OP_MSG without a body section')
  // Document sequences carry the same arrays the body could have held (documents, updates, deletes).
  for (const [identifier, documents] of sequences) body[identifier] = documents
  return { kind: 'msg', requestId, moreToCome: (flags & FLAG_MORE_TO_COME) !== 0, command: body }
}

function header (length: number, requestId: number, responseTo: number, opCode: number): Buffer {
  const buffer = Buffer.alloc(HEADER_SIZE)
  buffer.writeInt32LE(length, 0)
  buffer.writeInt32LE(requestId, 4)
  buffer.writeInt32LE(responseTo, 8)
  buffer.writeInt32LE(opCode, 12)
  return buffer
}

export function encodeReply (requestId: number, responseTo: number, document: Document): Buffer {
  const body = serialize(document)
  const fields = Buffer.alloc(20)
  fields.writeInt32LE(0, 0) // responseFlags
  const cursorId = Long.ZERO
  fields.writeInt32LE(cursorId.low, 4)
  fields.writeInt32LE(cursorId.high, 8)
  fields.writeInt32LE(0, 12) // startingFrom
  fields.writeInt32LE(1, 16) // numberReturned
  return Buffer.concat([header(HEADER_SIZE + fields.length + body.length, requestId, responseTo, OP_REPLY), fields, body])
}

export function encodeMsg (requestId: number, responseTo: number, document: Document): Buffer {
  const body = serialize(document)
  const flagsAndKind = Buffer.alloc(5)
  flagsAndKind.writeUInt32LE(0, 0)
  flagsAndKind.writeUInt8(0, 4)
  return Buffer.concat([header(HEADER_SIZE + flagsAndKind.length + body.length, requestId, responseTo, OP_MSG), flagsAndKind, body])
}

/**
 * Splits a TCP byte stream into whole messages. Returns the messages found and keeps the rest.
 */
export class MessageReader {
  #pending: Buffer[] = []
  #pendingLength = 0

  push (chunk: Buffer): Buffer[] {
    this.#pending.push(chunk)
    this.#pendingLength += chunk.length
    // Join the pieces only once a whole message is there, so a large message costs one copy.
    if (this.#pendingLength < 4) return []
    const expected = this.#expectedLength()
    if (expected < HEADER_SIZE || expected > MAX_MESSAGE_SIZE) throw new ProtocolError(`bad message length ${expected}`)
    if (this.#pendingLength < expected) return []
    const messages: Buffer[] = []
    let buffer = this.#pending.length === 1 ? chunk : Buffer.concat(this.#pending, this.#pendingLength)
    while (buffer.length >= 4) {
      const length = buffer.readInt32LE(0)
      if (length < HEADER_SIZE || length > MAX_MESSAGE_SIZE) throw new ProtocolError(`bad message length ${length}`)
      if (buffer.length < length) break
      messages.push(buffer.subarray(0, length))
      buffer = buffer.subarray(length)
    }
    this.#pending = buffer.length > 0 ? [buffer] : []
    this.#pendingLength = buffer.length
    return messages
  }

  #expectedLength (): number {
    const first = this.#pending[0] as Buffer
    if (first.length >= 4) return first.readInt32LE(0)
    return Buffer.concat(this.#pending, this.#pendingLength).readInt32LE(0)
  }
}
