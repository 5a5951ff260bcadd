import type { LoggerOptions } from 'pino'

// Everything that can carry a credential, wherever it appears in a log object.
export const redactedPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["sx-access-token"]',
  'req.headers["sx-refresh-token"]',
  'req.headers["st-access-token"]',
  'req.headers["st-refresh-token"]',
  'req.headers["front-token"]',
  'req.headers["anti-csrf"]',
  'req.headers["x-sync-signature"]',
  'res.headers["set-cookie"]',
  'res.headers["sx-access-token"]',
  'res.headers["sx-refresh-token"]',
  'res.headers["st-access-token"]',
  'res.headers["st-refresh-token"]',
  'res.headers["front-token"]',
  'headers.authorization',
  'headers.cookie',
  'password',
  '*.password',
  'newPassword',
  '*.newPassword',
  'token',
  '*.token',
  'secret',
  '*.secret',
  '*.clientSecret',
  '*.apiKey',
  '*.refreshToken',
  '*.accessToken',
  '*.internalAuthToken',
  '*.credentialEncryptionKey'
]

export function loggerOptions (level: string, pretty = process.stdout.isTTY === true): LoggerOptions {
  return {
    level,
    redact: { paths: redactedPaths, censor: '[redacted]' },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } } : {})
  }
}
