// Forgot and reset password in the browser: ?auth=forgot gives the same answer for every email;
// the link the backend logs (`test` environment) opens the reset dialog with the token taken out
// of the address bar, and the new password works.
import { test } from 'tap'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { resetLinks, startWebStack } from './stack.js'
import { signInThroughUi, signUpThroughUi } from './ui.js'
import { uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'

test('forgot password, then reset from the logged link, then sign in with the new password', async (t) => {
  const stack = await startWebStack(t)
  const browser = await launchBrowser(t)
  const page = await (await newContext(browser)).newPage()
  const errors = collectErrors(page)
  const email = uniqueEmail('reset')
  await signUpThroughUi(page, stack.webUrl, { name: 'Reset', email, password: 'old password 1' })
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.getByRole('button', { name: 'Sign in' }).waitFor()

  const answers: string[] = []
  for (const address of [uniqueEmail('nobody'), email]) {
    await page.goto(`${stack.webUrl}/day?auth=forgot`)
    t.equal(new URL(page.url()).search, '', 'the auth parameter left the URL')
    const dialog = page.getByRole('dialog', { name: 'Reset your password' })
    await dialog.getByLabel('Email').fill(address)
    await dialog.getByRole('button', { name: 'Send reset link' }).click()
    answers.push(String(await dialog.getByRole('status').textContent()))
  }
  t.equal(answers[0], answers[1], 'the same answer for an unknown and a known email')
  t.match(answers[1], /If an account exists/)

  t.ok(await waitFor(() => resetLinks(stack).length === 1, 5000), 'one reset link, for the known account only')
  const link = new URL(resetLinks(stack)[0] as string)
  t.equal(`${link.origin}${link.pathname}`, `${stack.webUrl}/day`, 'the link leads to this web client')
  t.equal(link.searchParams.get('auth'), 'reset')

  await page.goto(link.toString())
  const dialog = page.getByRole('dialog', { name: 'Choose a new password' })
  await dialog.waitFor()
  t.equal(page.url(), `${stack.webUrl}/day`, 'the token and the auth parameter left the address bar')
  await dialog.getByLabel('New password').fill('new password 2')
  // The session SDK reads the token from the address bar: this succeeds only because the client
  // puts the captured token back there for the submission.
  await dialog.getByRole('button', { name: 'Save password' }).click()
  await dialog.getByRole('status').filter({ hasText: 'Your password is changed' }).waitFor()
  t.equal(page.url(), `${stack.webUrl}/day`, 'and the token is not left behind after the submission')
  await dialog.getByRole('button', { name: 'Sign in' }).click()

  await signInThroughUi(page, { email, password: 'old password 1' })
  await page.getByRole('dialog', { name: 'Sign in' }).getByRole('alert').filter({ hasText: 'not right' }).waitFor()
  t.pass('the old password no longer works')
  await signInThroughUi(page, { email, password: 'new password 2' })
  await page.getByText(email, { exact: true }).waitFor()
  t.pass('the new password signs in')

  await page.goto(link.toString())
  const again = page.getByRole('dialog', { name: 'Choose a new password' })
  await again.getByLabel('New password').fill('third password 3')
  await again.getByRole('button', { name: 'Save password' }).click()
  await again.getByRole('alert').filter({ hasText: 'expired or was already used' }).waitFor()
  t.pass('a used link is refused with a clear message')
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
