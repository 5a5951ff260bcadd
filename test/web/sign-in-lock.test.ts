// In Chromium: a sign-in the server refuses for now (429) says how long to wait, from the
// answer's Retry-After, rather than that something went wrong.
import { test } from 'tap'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { signInThroughUi } from './ui.js'
import { uniqueEmail } from '../helper.js'
import { AUTH_LIMITS } from '../../lib/auth-limits.js'

test('a locked account: the sign-in dialog shows the wait the server gives', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const email = uniqueEmail('locked')
  const attempt = async (password: string, address: string, path = 'signin') => await app.inject({
    method: 'POST',
    url: `/api/auth/${path}`,
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', 'x-forwarded-for': address },
    payload: { formFields: [...(path === 'signup' ? [{ id: 'name', value: 'Locked' }] : []), { id: 'email', value: email }, { id: 'password', value: password }] }
  })
  t.equal((await attempt('the real password 1', '198.51.100.1', 'signup')).json().status, 'OK')
  // Guesses from elsewhere lock the account for every address it is not known at, this browser's too.
  for (let guess = 1; guess <= AUTH_LIMITS.failuresPerAccount.max; guess++) await attempt(`guess ${guess}`, `192.0.2.${guess}`)

  const browser = await launchBrowser(t)
  const page = await (await newContext(browser)).newPage()
  const errors = collectErrors(page)
  await page.goto(`${stack.webUrl}/day?auth=login`)
  await signInThroughUi(page, { email, password: 'the real password 1' })
  const alert = page.getByRole('dialog', { name: 'Sign in' }).getByRole('alert')
  await alert.waitFor()
  t.equal(await alert.textContent(), 'Too many attempts. Try again in 15 minutes.')
  // Besides the refusal, the browser reports the SDK's refresh attempt without a session (401) before its first call.
  t.same(errors.filter((error) => !/status of (401|429)/.test(error)), [], 'no other errors in the page')
})
