import { test } from 'tap'
import supertokens from 'supertokens-node'
import EmailPassword from 'supertokens-node/recipe/emailpassword'
import EmailVerification from 'supertokens-node/recipe/emailverification'
import ThirdParty from 'supertokens-node/recipe/thirdparty'
import UserMetadata from 'supertokens-node/recipe/usermetadata'
import { formFields, HeaderClient, jwtPayload, PROVIDER_ID, startHarness, uniqueEmail } from './harness.js'
import { startTarget } from './target.js'

const PASSWORD = 'correct-horse-9'

const tokenFromLink = (link: string): string => {
  const token = new URL(link).searchParams.get('token')
  if (token === null) throw new Error(`no token in ${link}`)
  return token
}

test('accounts through supertokens-node', async (t) => {
  const target = await startTarget(t)
  const { baseUrl, emails, providerAccounts } = await startHarness(t, target)

  async function signUp (email = uniqueEmail('acct'), password = PASSWORD) {
    const client = new HeaderClient(baseUrl)
    const result = await client.request('POST', '/auth/signup', formFields({ email, password, name: 'Lin' }))
    if (result.body['status'] !== 'OK') throw new Error(`sign-up failed: ${JSON.stringify(result.body)}`)
    return { client, email, userId: (result.body['user'] as { id: string }).id }
  }
  const signIn = (email: string, password: string) =>
    new HeaderClient(baseUrl).request('POST', '/auth/signin', formFields({ email, password }))

  await t.test('password reset: emailed token, single use, new password only', async (t) => {
    const { email, userId } = await signUp()
    const before = emails.length
    const asked = await call('POST', '/auth/user/password/reset/token', formFields({ email }))
    t.equal(asked.body['status'], 'OK')
    const sent = emails.slice(before)
    t.equal(sent.length, 1, 'one email captured, none sent')
    t.equal(sent[0]?.type, 'PASSWORD_RESET')
    t.equal(sent[0]?.email.toLowerCase(), email.toLowerCase())
    const token = tokenFromLink(sent[0]?.link ?? '')

    const unknown = await call('POST', '/auth/user/password/reset/token', formFields({ email: uniqueEmail('ghost') }))
    t.equal(unknown.body['status'], 'OK', 'unknown email gets the same answer')
    t.equal(emails.length, before + 1, 'and no email')

    const reset = await call('POST', '/auth/user/password/reset', { method: 'token', token, ...formFields({ password: 'new-password-7' }) })
    t.equal(reset.body['status'], 'OK')
    t.equal((await signIn(email, PASSWORD)).body['status'], 'WRONG_CREDENTIALS_ERROR', 'old password refused')
    const withNew = await signIn(email, 'new-password-7')
    t.equal(withNew.body['status'], 'OK')
    t.equal((withNew.body['user'] as { id: string }).id, userId)

    const reused = await call('POST', '/auth/user/password/reset', { method: 'token', token, ...formFields({ password: 'third-password-5' }) })
    t.equal(reused.body['status'], 'RESET_PASSWORD_INVALID_TOKEN_ERROR', 'a token works once')
    t.equal((await signIn(email, 'third-password-5')).body['status'], 'WRONG_CREDENTIALS_ERROR')
  })

  await t.test('third-party sign-in-up creates once, then signs in the same user', async (t) => {
    const email = uniqueEmail('tp')
    providerAccounts.set('code-1', { thirdPartyUserId: 'provider-user-1', email, isVerified: true })
    const body = (code: string) => ({
      thirdPartyId: PROVIDER_ID,
      redirectURIInfo: { redirectURIOnProviderDashboard: 'http://127.0.0.1:3000/callback', redirectURIQueryParams: { code } }
    })
    const client = new HeaderClient(baseUrl)
    const first = await client.request('POST', '/auth/signinup', body('code-1'))
    t.equal(first.body['status'], 'OK')
    t.equal(first.body['createdNewRecipeUser'], true)
    const user = first.body['user'] as { id: string, thirdParty: Array<{ id: string, userId: string }>, loginMethods: Array<{ verified: boolean, email: string }> }
    t.same(user.thirdParty, [{ id: PROVIDER_ID, userId: 'provider-user-1' }])
    t.equal(user.loginMethods[0]?.verified, true, 'provider-verified email is verified')
    t.equal(user.loginMethods[0]?.email, email.toLowerCase())
    t.ok(client.accessToken)
    t.equal(jwtPayload(client.accessToken ?? '')['sub'], user.id)

    providerAccounts.set('code-2', { thirdPartyUserId: 'provider-user-1', email, isVerified: true })
    const again = await new HeaderClient(baseUrl).request('POST', '/auth/signinup', body('code-2'))
    t.equal(again.body['createdNewRecipeUser'], false)
    t.equal((again.body['user'] as { id: string }).id, user.id, 'same user')

    const byInfo = await supertokens.listUsersByAccountInfo('public', { email: email.toUpperCase() })
    t.same(byInfo.map((u) => u.id), [user.id], 'found by email, compared normalised')
    const byProvider = await supertokens.listUsersByAccountInfo('public', { thirdParty: { id: PROVIDER_ID, userId: 'provider-user-1' } })
    t.same(byProvider.map((u) => u.id), [user.id])

    // A provider-verified email does not block a mapping (the core's one exception); the
    // verification follows the user to its external id.
    const fresh = await ThirdParty.manuallyCreateOrUpdateUser('public', PROVIDER_ID, 'provider-user-2', uniqueEmail('tp2'), true)
    if (fresh.status !== 'OK') throw new Error('third-party sign-up failed')
    const mapped = await supertokens.createUserIdMapping({ superTokensUserId: fresh.user.id, externalUserId: `ext-${fresh.user.id}` })
    t.equal(mapped.status, 'OK')
    const mappedUser = await supertokens.getUser(`ext-${fresh.user.id}`)
    t.equal(mappedUser?.id, `ext-${fresh.user.id}`)
    t.equal(mappedUser?.loginMethods[0]?.verified, true, 'still verified under the external id')
  })

  await t.test('user metadata: shallow merge, null deletes a key, clear removes all', async (t) => {
    const { userId } = await signUp()
    t.same((await UserMetadata.getUserMetadata(userId)).metadata, {}, 'empty to begin with')
    await UserMetadata.updateUserMetadata(userId, { sync: { state: 'RESTART' }, theme: 'dark', keep: 1 })
    const merged = await UserMetadata.updateUserMetadata(userId, { sync: { other: true }, theme: null })
    t.same(merged.metadata, { sync: { other: true }, keep: 1 }, 'top-level keys replaced, null removes')
    t.same((await UserMetadata.getUserMetadata(userId)).metadata, { sync: { other: true }, keep: 1 })
    await UserMetadata.clearUserMetadata(userId)
    t.same((await UserMetadata.getUserMetadata(userId)).metadata, {})
  })

  await t.test('user-id mapping: users and sessions then answer with the external id', async (t) => {
    // Created without a session: the core refuses to map an id that sessions already use.
    const email = uniqueEmail('mapped')
    const signedUp = await EmailPassword.signUp('public', email, PASSWORD)
    if (signedUp.status !== 'OK') throw new Error('sign-up failed')
    const userId = signedUp.user.id
    const externalId = `ext-${userId.slice(0, 8)}`
    const created = await supertokens.createUserIdMapping({ superTokensUserId: userId, externalUserId: externalId, externalUserIdInfo: 'from test' })
    t.equal(created.status, 'OK')
    const duplicate = await supertokens.createUserIdMapping({ superTokensUserId: userId, externalUserId: `${externalId}-2` })
    t.equal(duplicate.status, 'USER_ID_MAPPING_ALREADY_EXISTS_ERROR')

    for (const [id, type] of [[userId, 'SUPERTOKENS'], [externalId, 'EXTERNAL'], [externalId, 'ANY']] as const) {
      const found = await supertokens.getUserIdMapping({ userId: id, userIdType: type })
      t.same(found, { status: 'OK', superTokensUserId: userId, externalUserId: externalId, externalUserIdInfo: 'from test' }, `by ${type}`)
    }
    t.equal((await supertokens.getUser(userId))?.id, externalId, 'user by SuperTokens id answers with the external id')
    t.equal((await supertokens.getUser(externalId))?.id, externalId, 'user by external id')

    const signedIn = new HeaderClient(baseUrl)
    const result = await signedIn.request('POST', '/auth/signin', formFields({ email, password: PASSWORD }))
    t.equal((result.body['user'] as { id: string }).id, externalId)
    t.equal(jwtPayload(signedIn.accessToken ?? '')['sub'], externalId, 'session carries the external id')
    t.equal((await signedIn.request('GET', '/me')).body['userId'], externalId)

    t.equal((await supertokens.updateOrDeleteUserIdMappingInfo({ userId: externalId, externalUserIdInfo: 'changed' })).status, 'OK')
    const updated = await supertokens.getUserIdMapping({ userId })
    t.equal(updated.status === 'OK' ? updated.externalUserIdInfo : updated.status, 'changed')
    await t.rejects(supertokens.deleteUserIdMapping({ userId: externalId, userIdType: 'EXTERNAL' }),
      /UserId is already in use in Session recipe/, 'a mapping whose external id holds sessions stays')
    t.same(await supertokens.deleteUserIdMapping({ userId: externalId, userIdType: 'EXTERNAL', force: true }), { status: 'OK', didMappingExist: true })
    t.equal((await supertokens.getUserIdMapping({ userId })).status, 'UNKNOWN_MAPPING_ERROR')
    t.equal((await supertokens.getUser(userId))?.id, userId, 'back to the SuperTokens id')
  })

  await t.test('user-id mapping is refused for an id that already holds data, unless forced', async (t) => {
    const { userId } = await signUp()
    await t.rejects(supertokens.createUserIdMapping({ superTokensUserId: userId, externalUserId: `ext-${userId}` }),
      /UserId is already in use in Session recipe/)
    const quiet = await EmailPassword.signUp('public', uniqueEmail('quiet'), PASSWORD)
    if (quiet.status !== 'OK') throw new Error('sign-up failed')
    await UserMetadata.updateUserMetadata(quiet.user.id, { early: true })
    await t.rejects(supertokens.createUserIdMapping({ superTokensUserId: quiet.user.id, externalUserId: `ext-${quiet.user.id}` }),
      /UserId is already in use in UserMetadata recipe/)
    t.equal((await supertokens.getUserIdMapping({ userId })).status, 'UNKNOWN_MAPPING_ERROR', 'nothing created')
    const forced = await supertokens.createUserIdMapping({ superTokensUserId: userId, externalUserId: `ext-${userId}`, force: true })
    t.equal(forced.status, 'OK')
    t.equal((await supertokens.createUserIdMapping({ superTokensUserId: 'no-such-user', externalUserId: 'ext-none' })).status,
      'UNKNOWN_SUPERTOKENS_USER_ID_ERROR')
  })

  await t.test('email verification: emailed token, verified state in the user and the session claim', async (t) => {
    const { client, email, userId } = await signUp()
    t.equal((jwtPayload(client.accessToken ?? '')['st-ev'] as { v: boolean }).v, false, 'claim starts unverified')
    const before = emails.length
    const asked = await client.request('POST', '/auth/user/email/verify/token')
    t.equal(asked.body['status'], 'OK')
    const sent = emails.slice(before)
    t.equal(sent.length, 1)
    t.equal(sent[0]?.type, 'EMAIL_VERIFICATION')
    const token = tokenFromLink(sent[0]?.link ?? '')

    const wrong = await client.request('POST', '/auth/user/email/verify', { method: 'token', token: `${token}x` })
    t.equal(wrong.body['status'], 'EMAIL_VERIFICATION_INVALID_TOKEN_ERROR')
    const verified = await client.request('POST', '/auth/user/email/verify', { method: 'token', token })
    t.equal(verified.body['status'], 'OK')
    const state = await client.request('GET', '/auth/user/email/verify')
    t.equal(state.body['isVerified'], true)
    t.equal((jwtPayload(client.accessToken ?? '')['st-ev'] as { v: boolean }).v, true, 'session claim updated')
    const user = await supertokens.getUser(userId)
    t.equal(user?.loginMethods[0]?.verified, true)
    t.equal(user?.loginMethods[0]?.email, email.toLowerCase())

    const again = await client.request('POST', '/auth/user/email/verify/token')
    t.equal(again.body['status'], 'EMAIL_ALREADY_VERIFIED_ERROR')

    const recipeUserId = supertokens.convertToRecipeUserId(userId)
    t.same(await EmailVerification.unverifyEmail(recipeUserId), { status: 'OK' })
    t.equal(await EmailVerification.isEmailVerified(recipeUserId), false, 'unverified')
    t.equal((await supertokens.getUser(userId))?.loginMethods[0]?.verified, false)

    const created = await EmailVerification.createEmailVerificationToken('public', recipeUserId)
    if (created.status !== 'OK') throw new Error('expected a token')
    await EmailVerification.revokeEmailVerificationTokens('public', recipeUserId)
    const revoked = await EmailVerification.verifyEmailUsingToken('public', created.token)
    t.equal(revoked.status, 'EMAIL_VERIFICATION_INVALID_TOKEN_ERROR', 'revoked tokens no longer verify')
  })

  await t.test('update email or password', async (t) => {
    const { userId } = await signUp()
    const taken = await signUp()
    const recipeUserId = supertokens.convertToRecipeUserId(userId)
    const newEmail = uniqueEmail('moved')
    t.same(await EmailPassword.updateEmailOrPassword({ recipeUserId, email: newEmail }), { status: 'OK' })
    const moved = await signIn(newEmail, PASSWORD)
    t.equal(moved.body['status'], 'OK', 'sign-in with the new email')
    t.equal((moved.body['user'] as { id: string }).id, userId)

    const clash = await EmailPassword.updateEmailOrPassword({ recipeUserId, email: taken.email })
    t.equal(clash.status, 'EMAIL_ALREADY_EXISTS_ERROR')
    t.equal((await signIn(newEmail, PASSWORD)).body['status'], 'OK', 'a refused update changes nothing')

    t.same(await EmailPassword.updateEmailOrPassword({ recipeUserId, password: 'another-pass-3' }), { status: 'OK' })
    t.equal((await signIn(newEmail, 'another-pass-3')).body['status'], 'OK')
    t.equal((await signIn(newEmail, PASSWORD)).body['status'], 'WRONG_CREDENTIALS_ERROR')
    const unknown = await EmailPassword.updateEmailOrPassword({ recipeUserId: supertokens.convertToRecipeUserId('no-such-user'), password: 'x-password-9' })
    t.equal(unknown.status, 'UNKNOWN_USER_ID_ERROR')
  })

  await t.test('delete user removes the account, its sessions and its metadata', async (t) => {
    const { client, email, userId } = await signUp()
    await UserMetadata.updateUserMetadata(userId, { note: 'bye' })
    t.equal((await client.request('GET', '/me/checked')).status, 200)
    await supertokens.deleteUser(userId)
    t.equal(await supertokens.getUser(userId), undefined)
    t.equal((await signIn(email, PASSWORD)).body['status'], 'WRONG_CREDENTIALS_ERROR')
    t.equal((await client.request('GET', '/me/checked')).status, 401, 'sessions revoked')
    t.same((await UserMetadata.getUserMetadata(userId)).metadata, {}, 'metadata removed')
    const reused = await new HeaderClient(baseUrl).request('POST', '/auth/signup', formFields({ email, password: PASSWORD, name: 'Again' }))
    t.equal(reused.body['status'], 'OK', 'the email is free again')
  })

  function call (method: string, path: string, body?: unknown) {
    return new HeaderClient(baseUrl).request(method, path, body)
  }
})
