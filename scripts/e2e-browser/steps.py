#!/usr/bin/env python3
"""Opens a page in Debian's chromium (headless, driven by Playwright) and runs a list of steps against it and the
origin, then prints one JSON report on stdout: each step's result and when it ended. The checks are the caller's.

    steps.py SPEC.json     SPEC: {"url": URL, "width": 1400, "height": 900, "headers": {...}, "steps": [STEP, ...]}
    STEP: {"do": "waitFor", "js": EXPR, "timeout": 10}   evaluates EXPR (may return a promise) every 100 ms until it
                                                         is truthy (an object: its "ok" field); result: the last value
          {"do": "eval", "js": EXPR}                     result: EXPR's value
          {"do": "screenshot", "path": FILE}             a PNG of the viewport
          {"do": "request", "method": "POST", "url": URL, "body": TEXT}   from this process (not the page); "{now}"
                                                         in the body becomes the current UTC time (ISO 8601)
          {"do": "waitText", "url": URL, "contains": TEXT, "timeout": 10}   GETs URL every 100 ms until it contains TEXT
          {"do": "sleep", "seconds": 1}
Every result has "ok", "elapsed" (seconds the step took) and "at" (wall clock when it ended, seconds since 1970).
"headers" are sent with every request the page makes (e.g. an admin bearer token). Exit status 0 when the steps
ran (whatever they found), 2 when the browser could not be started.
"""

import datetime
import json
import sys
import time
import urllib.request

from playwright.sync_api import sync_playwright

from play import launch  # the same browser, started the same way


def http(method, url, body=None, headers=None):
    data = None if body is None else body.encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def truthy(value):
    return bool(value.get("ok")) if isinstance(value, dict) else bool(value)


def run(page, step, headers):
    kind = step["do"]
    if kind == "waitFor":
        deadline = time.monotonic() + float(step.get("timeout", 10))
        while True:
            try:
                value = page.evaluate(step["js"])
            except Exception as error:  # noqa: BLE001 - a page still loading; reported if it never passes
                value = {"ok": False, "error": str(error)[:300]}
            if truthy(value) or time.monotonic() >= deadline:
                return {"ok": truthy(value), "value": value}
            time.sleep(0.1)
    if kind == "eval":
        return {"ok": True, "value": page.evaluate(step["js"])}
    if kind == "screenshot":
        page.screenshot(path=step["path"])
        return {"ok": True}
    if kind == "request":
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        body = step.get("body")
        status, text = http(step.get("method", "GET"), step["url"], body and body.replace("{now}", now), headers)
        return {"ok": 200 <= status < 300, "status": status, "text": text[:2000]}
    if kind == "waitText":
        deadline = time.monotonic() + float(step.get("timeout", 10))
        while True:
            status, text = http("GET", step["url"], headers=headers)
            if step["contains"] in text or time.monotonic() >= deadline:
                return {"ok": step["contains"] in text, "status": status, "text": text[-3000:]}
            time.sleep(0.1)
    if kind == "sleep":
        time.sleep(float(step["seconds"]))
        return {"ok": True}
    return {"ok": False, "error": f"unknown step {kind}"}


def main():
    with open(sys.argv[1]) as file:
        spec = json.load(file)
    headers = spec.get("headers") or {}
    report = {"steps": []}
    with sync_playwright() as playwright:
        browser = launch(playwright)
        if browser is None:
            return 2
        report["browser"] = browser.version
        context = browser.new_context(
            viewport={"width": spec.get("width", 1400), "height": spec.get("height", 900)},
            extra_http_headers=headers,
        )
        page = context.new_page()
        console = []
        page.on("console", lambda m: len(console) < 100 and console.append(f"{m.type}: {m.text}"[:300]))
        page.on("pageerror", lambda e: console.append(f"pageerror: {e}"[:300]))
        page.goto(spec["url"])
        for step in spec["steps"]:
            begun = time.monotonic()
            try:
                result = run(page, step, headers)
            except Exception as error:  # noqa: BLE001 - one failed step must not hide the others
                result = {"ok": False, "error": str(error)[:500]}
            result["elapsed"] = round(time.monotonic() - begun, 3)
            result["at"] = round(time.time(), 3)
            report["steps"].append(result)
        report["console"] = console
        browser.close()
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
