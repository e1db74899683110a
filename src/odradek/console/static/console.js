// odradek console: live throughput charts, a group's live lag and delete confirmations. No
// library: the page is server-rendered; this script polls /api/offsets once a second (and draws
// an SVG line) and /api/group every two seconds. Everything it writes into the page is set with
// textContent or as an attribute, never as HTML.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const POLL_MS = 1000;
const POINTS = 60;

function svgElement(name, attributes) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) {
    element.setAttribute(key, String(value));
  }
  return element;
}

function drawChart(svg, rates) {
  const width = 600;
  const height = 120;
  const top = 14;
  const max = Math.max(1, ...rates);
  while (svg.firstChild) {
    svg.removeChild(svg.firstChild);
  }
  svg.appendChild(svgElement("line", { x1: 0, y1: height - 1, x2: width, y2: height - 1, class: "axis" }));
  const step = width / (POINTS - 1);
  const offset = (POINTS - rates.length) * step;
  const points = rates.map((rate, index) => {
    const x = offset + index * step;
    const y = height - 1 - (rate / max) * (height - top - 2);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  });
  if (points.length > 1) {
    svg.appendChild(svgElement("polyline", { points: points.join(" "), class: "series" }));
  }
  const label = svgElement("text", { x: 4, y: 11, class: "scale" });
  label.textContent = `max ${Math.round(max).toLocaleString()} records/s (last ${POINTS} s)`;
  svg.appendChild(label);
}

function startChart(svg) {
  const url = svg.dataset.offsetsUrl;
  const box = svg.closest(".chart-box");
  const rateValue = box ? box.querySelector(".rate-value") : null;
  const rates = [];
  let previous = null;

  async function poll() {
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      const answer = await response.json();
      if (!response.ok) {
        throw new Error(answer.error || `HTTP ${response.status}`);
      }
      if (previous !== null && answer.now_ms > previous.now_ms) {
        const seconds = (answer.now_ms - previous.now_ms) / 1000;
        const rate = Math.max(0, answer.total - previous.total) / seconds;
        rates.push(rate);
        if (rates.length > POINTS) {
          rates.shift();
        }
        if (rateValue) {
          rateValue.textContent = rate.toFixed(1);
          rateValue.dataset.samples = String(rates.length);
        }
        drawChart(svg, rates);
      }
      previous = answer;
      svg.dataset.total = String(answer.total);
    } catch (error) {
      if (rateValue) {
        rateValue.textContent = `unavailable (${error.message})`;
      }
    }
    window.setTimeout(poll, POLL_MS);
  }
  drawChart(svg, rates);
  poll();
}

const LAG_POLL_MS = 2000;

function startLiveLag(box) {
  const url = box.dataset.lagUrl;
  const total = document.getElementById("total-lag");
  const totalTime = document.getElementById("total-lag-time");
  const state = document.getElementById("group-state");
  const rows = new Map();
  for (const row of document.querySelectorAll("#lag tbody tr[data-key]")) {
    rows.set(row.dataset.key, row);
  }

  async function poll() {
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      const answer = await response.json();
      if (response.ok) {
        total.textContent = answer.lag_text;
        total.dataset.lag = String(answer.lag);
        totalTime.textContent = answer.lag_time_text;
        totalTime.dataset.lagMs = answer.lag_ms === null ? "-" : String(answer.lag_ms);
        if (state) {
          state.textContent = answer.state;
        }
        for (const partition of answer.partitions) {
          const row = rows.get(partition.key);
          if (!row) {
            continue;
          }
          for (const cell of row.querySelectorAll("[data-field]")) {
            cell.textContent = partition[cell.dataset.field];
          }
        }
        box.dataset.updates = String(Number(box.dataset.updates || "0") + 1);
      }
    } catch (error) {
      // The server-rendered figures stay; the next poll tries again.
    }
    window.setTimeout(poll, LAG_POLL_MS);
  }
  window.setTimeout(poll, LAG_POLL_MS);
}

function confirmForms() {
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) {
        event.preventDefault();
      }
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const svg of document.querySelectorAll("svg.throughput[data-offsets-url]")) {
    startChart(svg);
  }
  for (const box of document.querySelectorAll("[data-lag-url]")) {
    startLiveLag(box);
  }
  confirmForms();
});
