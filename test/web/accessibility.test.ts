// /day passes axe-core without serious or critical violations (the page, the event dialog and
// an auth dialog), is usable from the keyboard, and `?auth=verify` opens nothing.
import { test } from 'tap'
import type { Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { eventBlock } from './ui.js'
import { seriousViolations } from './axe.js'

/** The accessible name (or text) of what has focus. */
async function focused (page: Page): Promise<string> {
  return await page.evaluate(`(() => {
    const el = document.activeElement
    return (el.getAttribute('aria-label') || el.textContent || el.getAttribute('id') || el.tagName).trim()
  })()`) as string
}

test('accessibility', async (t) => {
  // One stack for the file: a process's session library serves one backend's origins and providers.
  const stack = await startWebStack(t)

  await t.test('axe-core finds nothing serious on /day, in the event dialog or the sign-up dialog', async (t) => {
    const browser = await launchBrowser(t)
    // The scan is injected as a script, which the page's own CSP would refuse.
    const page = await (await newContext(browser, { bypassCSP: true })).newPage()
    const errors = collectErrors(page)
    await page.goto(`${stack.webUrl}/day`)
    await eventBlock(page, 'Deep work').waitFor()
    t.same(await seriousViolations(page), [], '/day with events')

    await page.getByRole('button', { name: 'New event' }).click()
    await page.getByRole('dialog', { name: 'New event' }).waitFor()
    t.same(await seriousViolations(page), [], 'the event dialog')
    await page.keyboard.press('Escape')

    await page.goto(`${stack.webUrl}/week?auth=signup`)
    await page.getByRole('dialog', { name: 'Create your account' }).waitFor()
    t.same(await seriousViolations(page), [], 'the week view under the sign-up dialog')
    t.same(errors, [], 'no errors in the page')
  })

  await t.test('keyboard: skip link, toolbar, events and dialogs are reachable; focus goes into a dialog and back', async (t) => {
    const browser = await launchBrowser(t)
    const page = await (await newContext(browser)).newPage()
    await page.goto(`${stack.webUrl}/?auth=verify`)
    await eventBlock(page, 'Deep work').waitFor()
    t.equal(new URL(page.url()).pathname + new URL(page.url()).search, '/day?auth=verify', 'verify is kept through the redirect to /day')
    t.equal(await page.getByRole('dialog').count(), 0, 'and opens nothing')

    const reached: string[] = []
    for (let presses = 0; presses < 40 && !reached.some((name) => name.startsWith('Deep work')); presses++) {
      await page.keyboard.press('Tab')
      reached.push(await focused(page))
    }
    t.equal(reached[0], 'Skip to calendar', 'the skip link comes first')
    for (const name of ['Today', 'Previous day', 'Next day', 'Day', 'Week', 'Refresh events', 'Sign in', 'Create account', 'New event']) {
      t.ok(reached.includes(name), `reachable: ${name}`)
    }
    t.ok(reached.some((name) => name.startsWith('Deep work, ')), 'the events of the grid are reachable, with their time in the name')

    await page.keyboard.press('Enter')
    await page.getByRole('dialog', { name: 'Deep work' }).waitFor()
    t.equal(await focused(page), 'Edit', 'Enter shows the event\'s details, focus on Edit')
    await page.keyboard.press('Enter')
    const dialog = page.getByRole('dialog', { name: 'Edit event' })
    await dialog.waitFor()
    t.equal(await focused(page), 'event-title-input', 'Edit moves focus into the form, to the title')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'hidden' })
    t.match(await focused(page), /^Deep work, /, 'and comes back to the event that opened it')

    await page.keyboard.press('Alt+ArrowDown')
    await eventBlock(page, 'Deep work').filter({ hasText: '14:15 – 16:15' }).waitFor()
    t.pass('Alt+ArrowDown moves the focused event by 15 minutes')

    await page.goto(`${stack.webUrl}/day`)
    await page.getByRole('button', { name: 'New event' }).focus()
    await page.keyboard.press('Enter')
    await page.getByRole('dialog', { name: 'New event' }).waitFor()
    await page.keyboard.type('Written with the keyboard')
    await page.keyboard.press('Enter')
    await eventBlock(page, 'Written with the keyboard').waitFor()
    t.pass('an event can be created without a pointer')
  })
})
