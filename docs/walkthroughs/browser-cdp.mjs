// Playwright and Puppeteer on one cloud browser session (docs/browser.md): both connect to the session's cdpUrl,
// see each other's pages, and disconnect without ending the session. `node browser-cdp.mjs CDP_URL DEMO_URL`.
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';

const [cdpUrl, demoUrl] = process.argv.slice(2);

const browser = await chromium.connectOverCDP(cdpUrl); // Playwright
const page = await browser.contexts()[0].newPage();
await page.goto(`${demoUrl}/members`);
await page.waitForSelector('.member');
console.log('Playwright sees', await page.locator('.member').count(), 'members');

const puppet = await puppeteer.connect({ browserWSEndpoint: cdpUrl }); // Puppeteer, at the same time
const pages = await puppet.pages();
const members = pages.find((p) => p.url().endsWith('/members'));
console.log('Puppeteer sees the same page:', await members.title());

await puppet.disconnect();
await browser.close(); // over CDP this disconnects; the session keeps running until it is released
