import { test } from 'tap'
import { afterFailure, decideSend, dayLength, enrollmentRows, staleAfterMs, type Recipient } from '../../lib/email-sequence.js'
import { apiLink, listUnsubscribeHeaders, unsubscribeKey, unsubscribeLink, unsubscribeToken, userOfUnsubscribeToken } from '../../lib/email-links.js'
import { greetableName, renderEmail } from '../../lib/email-templates.js'

// The email block's rules, cell by cell, without a server.

const DUE = new Date('2026-01-10T12:00:00Z')
const someone: Recipient = { email: 'Someone@Example.com', suppressed: false, hasProviderCalendar: false }

test('what the poller does with a claimed row', async (t) => {
  const at = (ms: number) => new Date(DUE.getTime() + ms)
  const cases: Array<[string, Parameters<typeof decideSend>[0], ReturnType<typeof decideSend>]> = [
    ['due, allowed', { step: 'welcome', dueAt: DUE, now: at(1000), profile: 'real', allowlist: [], recipient: someone }, { action: 'send' }],
    ['no account', { step: 'welcome', dueAt: DUE, now: at(0), profile: 'real', allowlist: [], recipient: undefined }, { action: 'finish', state: 'canceled', reason: 'no account' }],
    ['suppressed beats everything', { step: 'connect-calendar', dueAt: DUE, now: at(3 * 86_400_000), profile: 'real', allowlist: ['x@example.com'], recipient: { ...someone, suppressed: true, hasProviderCalendar: true } }, { action: 'finish', state: 'canceled', reason: 'suppressed' }],
    ['two days late is still sent', { step: 'welcome', dueAt: DUE, now: at(2 * 86_400_000), profile: 'real', allowlist: [], recipient: someone }, { action: 'send' }],
    ['past two days is stale', { step: 'welcome', dueAt: DUE, now: at(2 * 86_400_000 + 1), profile: 'real', allowlist: [], recipient: someone }, { action: 'finish', state: 'stale', reason: 'past due' }],
    ['fast: two minutes', { step: 'welcome', dueAt: DUE, now: at(120_001), profile: 'fast', allowlist: [], recipient: someone }, { action: 'finish', state: 'stale', reason: 'past due' }],
    ['calendar step with a calendar', { step: 'connect-calendar', dueAt: DUE, now: at(0), profile: 'real', allowlist: [], recipient: { ...someone, hasProviderCalendar: true } }, { action: 'finish', state: 'skipped', reason: 'calendar connected' }],
    ['other steps with a calendar', { step: 'booking', dueAt: DUE, now: at(0), profile: 'real', allowlist: [], recipient: { ...someone, hasProviderCalendar: true } }, { action: 'send' }],
    ['not on the allowlist: held', { step: 'welcome', dueAt: DUE, now: at(0), profile: 'real', allowlist: ['other@example.com'], recipient: someone }, { action: 'hold', reason: 'allowlist' }],
    ['on it, in another case', { step: 'welcome', dueAt: DUE, now: at(0), profile: 'real', allowlist: [' someone@EXAMPLE.com'], recipient: someone }, { action: 'send' }]
  ]
  for (const [name, input, expected] of cases) t.same(decideSend(input), expected, name)
})

test('rows of a new account and the retry ladder', async (t) => {
  const rows = enrollmentRows('0123456789abcdef01234567', DUE, 'fast', DUE)
  t.same(rows.map((row) => [row._id, (row.dueAt.getTime() - DUE.getTime()) / dayLength('fast')]), [
    ['0123456789abcdef01234567:welcome', 0], ['0123456789abcdef01234567:shortcuts', 2], ['0123456789abcdef01234567:connect-calendar', 5], ['0123456789abcdef01234567:booking', 9]
  ])
  t.equal(staleAfterMs('real'), 2 * 86_400_000)
  const ceilings = [0, 1, 2, 3, 4, 5, 6].map((before) => afterFailure(before, false, DUE, () => 0.999999))
  t.same(ceilings.slice(0, 4).map((outcome) => outcome.state === 'queued' ? Math.round((outcome.nextAttemptAt.getTime() - DUE.getTime()) / 1000) : outcome.state), [60, 120, 240, 480])
  t.same(ceilings.slice(4).map((outcome) => outcome.state), ['failed', 'failed', 'failed'], 'the fifth failure is final')
  t.same(afterFailure(0, true, DUE), { state: 'failed', attempts: 1 }, 'a refused mail fails at once')
})

test('unsubscribe tokens and links', async (t) => {
  const userId = '0123456789abcdef01234567'
  const token = unsubscribeToken('secret-one', userId)
  t.match(token, /^0123456789abcdef01234567\.[A-Za-z0-9_-]{43}$/)
  t.equal(userOfUnsubscribeToken('secret-one', token), userId)
  t.equal(userOfUnsubscribeToken('secret-two', token), undefined, 'another secret')
  t.equal(userOfUnsubscribeToken('secret-one', `${'f'.repeat(24)}.${token.split('.')[1]}`), undefined, 'another user')
  t.equal(userOfUnsubscribeToken('secret-one', `${token}.x`), undefined)
  t.equal(userOfUnsubscribeToken('secret-one', 'not-an-id.abc'), undefined)
  t.equal(userOfUnsubscribeToken('secret-one', `${userId}.short`), undefined)
  for (const apiUrl of ['https://calendar.example.org/api', 'https://calendar.example.org/api/']) {
    t.equal(unsubscribeLink(apiUrl, 'secret-one', userId), `https://calendar.example.org/api/email/unsubscribe?token=${token}`, apiUrl)
  }
  t.equal(apiLink('http://localhost:3000/api', '/email/webhooks/resend'), 'http://localhost:3000/api/email/webhooks/resend')
  t.same(listUnsubscribeHeaders('https://x.example/u'), { 'List-Unsubscribe': '<https://x.example/u>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' })
  t.equal(unsubscribeKey('given', 'service-token'), 'given')
  t.equal(unsubscribeKey(undefined, 'service-token'), unsubscribeKey(undefined, 'service-token'), 'derived the same way every time')
  t.not(unsubscribeKey(undefined, 'service-token'), unsubscribeKey(undefined, 'another-token'))
})

test('every mail has both parts, the link in each, and escapes the name', async (t) => {
  for (const step of ['welcome', 'shortcuts', 'connect-calendar', 'booking'] as const) {
    const mail = renderEmail(step, { name: '<b>Eve</b>', webUrl: 'https://calendar.example.org', unsubscribeLink: 'https://calendar.example.org/api/email/unsubscribe?token=a.b' })
    t.match(mail.text, /Unsubscribe: https:\/\/calendar\.example\.org\/api\/email\/unsubscribe\?token=a\.b/, step)
    t.match(mail.html, /<a href="https:\/\/calendar\.example\.org\/api\/email\/unsubscribe\?token=a\.b">Unsubscribe<\/a>/, step)
    t.notMatch(mail.html, /<b>Eve<\/b>/, `${step}: markup is no name`)
    t.match(mail.text, /^Hello,\n/, `${step}: the greeting is plain instead`)
  }
  t.match(renderEmail('welcome', { name: undefined, webUrl: 'https://c.example', unsubscribeLink: 'https://c.example/u' }).text, /^Hello,/)
  t.match(renderEmail('welcome', { name: ' Zoë  O\'Brien-Núñez ', webUrl: 'https://c.example', unsubscribeLink: 'https://c.example/u' }).text, /^Hello Zoë O'Brien-Núñez,/, 'a name of any script, spaces folded')
  t.match(renderEmail('welcome', { name: 'Dr. Ada', webUrl: 'https://c.example', unsubscribeLink: 'https://c.example/u' }).text, /^Hello Dr\. Ada,/)
})

test('a name that is not a name is never in the greeting: a link, a sentence, an address', async (t) => {
  for (const name of ['Your account was suspended. Restore it at http://evil.example/x', 'evil.example', 'http://evil.example', 'Eve <eve@evil.example>', 'Click here: evil', 'A'.repeat(41), '\u202Eevil']) {
    t.equal(greetableName(name), null, JSON.stringify(name))
    const mail = renderEmail('welcome', { name, webUrl: 'https://c.example', unsubscribeLink: 'https://c.example/u' })
    t.match(mail.text, /^Hello,\n/)
    t.notMatch(mail.text, /evil/)
  }
})
