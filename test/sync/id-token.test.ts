import { test } from 'tap'
import { idTokenIdentity } from '../../sync/lib/providers/id-token.js'

const GOOGLE = { email: ['email'], subject: ['sub'] }
const MICROSOFT = { email: ['email', 'preferred_username'], subject: ['oid', 'sub'] }

/** An ID token as a token endpoint sends it: header, payload and a signature nobody checks here. */
function idToken (claims: Record<string, unknown>): string {
  const part = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')
  return `${part({ alg: 'RS256', kid: 'k1' })}.${part(claims)}.c2lnbmF0dXJl`
}

test('the identity an ID token names, by the provider\'s claims', async (t) => {
  t.same(idTokenIdentity(idToken({ sub: '1170', email: 'ada@example.com' }), GOOGLE), { email: 'ada@example.com', sub: '1170' })
  t.same(idTokenIdentity(idToken({ sub: 'pairwise', oid: 'object-id', preferred_username: 'ada@contoso.com' }), MICROSOFT),
    { email: 'ada@contoso.com', sub: 'object-id' }, 'Microsoft: the object id over the pairwise subject, the sign-in name when there is no email claim')
  t.same(idTokenIdentity(idToken({ sub: 'pairwise', email: 'ada@example.com', preferred_username: 'other' }), MICROSOFT),
    { email: 'ada@example.com', sub: 'pairwise' }, 'the email claim first; the subject when there is no object id')
  t.same(idTokenIdentity(idToken({ sub: 42, email: '' }), GOOGLE), {}, 'a claim that is not a non-empty string names nothing')
})

test('a token that is not a JWT names no one', async (t) => {
  for (const token of [undefined, null, '', 'not-a-jwt', 'a.!!!.c', `x.${Buffer.from('[1,2]').toString('base64url')}.y`]) {
    t.same(idTokenIdentity(token, GOOGLE), {}, String(token))
  }
})
