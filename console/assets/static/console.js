// Tributary console: progressive enhancement only. Every form works
// without this script; the server checks everything again.
'use strict';
(function () {
  // A delete button stays disabled until its field holds the exact name.
  document.querySelectorAll('input[data-confirm]').forEach(function (input) {
    var button = input.form.querySelector('[data-confirm-button]');
    var sync = function () { button.disabled = input.value !== input.dataset.confirm; };
    input.addEventListener('input', sync);
    sync();
  });

  // "Back" goes back when there is somewhere to go.
  document.querySelectorAll('a[data-back]').forEach(function (a) {
    a.addEventListener('click', function (e) {
      if (history.length > 1) { e.preventDefault(); history.back(); }
    });
  });

  // Show only the topic's own config overrides.
  document.querySelectorAll('input[data-toggle]').forEach(function (box) {
    var sync = function () {
      document.querySelectorAll(box.dataset.toggle).forEach(function (row) { row.hidden = box.checked; });
    };
    box.addEventListener('change', sync);
    sync();
  });

  // Auto-refresh, for watching lag fall or partitions recover. The choice
  // is kept per page for the tab, so it survives the reload it causes.
  document.querySelectorAll('input[data-refresh]').forEach(function (box) {
    var key = 'refresh:' + location.pathname;
    var timer = null;
    var sync = function () {
      clearTimeout(timer);
      if (box.checked) {
        sessionStorage.setItem(key, '1');
        timer = setTimeout(function () { location.reload(); }, box.dataset.refresh * 1000);
      } else {
        sessionStorage.removeItem(key);
      }
    };
    box.checked = sessionStorage.getItem(key) === '1';
    box.addEventListener('change', sync);
    sync();
  });

  // The browse form shows the offset or the time field only when its mode
  // uses it.
  var mode = document.getElementById('b-mode');
  if (mode) {
    var fields = document.querySelectorAll('[data-mode]');
    var show = function () {
      fields.forEach(function (f) {
        var on = f.dataset.mode === mode.value;
        f.disabled = !on;
        var label = document.querySelector('label[for="' + f.id + '"]');
        f.hidden = !on;
        if (label) { label.hidden = !on; }
      });
    };
    mode.addEventListener('change', show);
    show();
  }
})();
