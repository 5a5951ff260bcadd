// Server errors shaped as mongod shapes them, so the driver takes its real code paths.
import type { Document } from 'bson'

const CODE_NAMES: Record<number, string> = {
  2: 'BadValue',
  9: 'FailedToParse',
  11: 'UserNotFound',
  13: 'Unauthorized',
  14: 'TypeMismatch',
  18: 'AuthenticationFailed',
  20: 'IllegalOperation',
  23: 'AlreadyInitialized',
  26: 'NamespaceNotFound',
  27: 'IndexNotFound',
  40: 'ConflictingUpdateOperators',
  43: 'CursorNotFound',
  48: 'NamespaceExists',
  51000: 'UserAlreadyExists',
  59: 'CommandNotFound',
  66: 'ImmutableField',
  67: 'CannotCreateIndex',
  72: 'InvalidOptions',
  73: 'InvalidNamespace',
  74: 'NodeNotFound',
  76: 'NoReplicationEnabled',
  85: 'IndexOptionsConflict',
  86: 'IndexKeySpecsConflict',
  93: 'InvalidReplicaSetConfig',
  94: 'NotYetInitialized',
  112: 'WriteConflict',
  115: 'CommandNotSupported',
  125: 'TransactionCommitFailed',
  197: 'InvalidIndexSpecificationOption',
  237: 'CursorKilled',
  251: 'NoSuchTransaction',
  256: 'TransactionCommitted',
  260: 'InvalidResumeToken',
  263: 'OperationNotSupportedInTransaction',
  280: 'ChangeStreamFatalError',
  286: 'ChangeStreamHistoryLost',
  290: 'TransactionExceededLifetimeLimitSeconds',
  10107: 'NotWritablePrimary',
  11000: 'DuplicateKey',
  13435: 'NotPrimaryNoSecondaryOk',
  13436: 'NotPrimaryOrSecondary'
}

export class CommandError extends Error {
  readonly code: number
  readonly labels: string[]
  readonly extra: Document

  constructor (code: number, message: string, extra: Document = {}, labels: string[] = []) {
    super(message)
    this.code = code
    this.extra = extra
    this.labels = labels
  }

  get codeName (): string {
    // mongod names the codes of its assertion sites (uassert numbers) Location<code>.
    return CODE_NAMES[this.code] ?? (this.code >= 10_000 ? `Location${this.code}` : 'UnknownError')
  }

  /** The reply document of a failed command. */
  toReply (): Document {
    const reply: Document = { ok: 0, errmsg: this.message, code: this.code, codeName: this.codeName, ...this.extra }
    if (this.labels.length > 0) reply.errorLabels = this.labels
    return reply
  }

  /** The entry of a write command's `writeErrors` array. */
  toWriteError (index: number): Document {
    return { index, code: this.code, errmsg: this.message, ...this.extra }
  }
}

export function writeConflict (): CommandError {
  return new CommandError(112, 'Caused by :: Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.', {}, ['TransientTransactionError'])
}
