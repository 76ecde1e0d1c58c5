// "Select all on this page" of the job list: the header's checkbox ticks or
// clears every job's. Without JavaScript each job is ticked by hand; the
// bulk form works the same.
(function () {
  "use strict";
  var all = document.getElementById("select-all");
  if (!all) return;
  var boxes = document.querySelectorAll('#bulk input[name="id"]');
  all.addEventListener("change", function () {
    boxes.forEach(function (b) { b.checked = all.checked; });
  });
  // The header box follows the rows: ticked when every one is.
  boxes.forEach(function (b) {
    b.addEventListener("change", function () {
      var n = 0;
      boxes.forEach(function (x) { if (x.checked) n++; });
      all.checked = n === boxes.length;
      all.indeterminate = n > 0 && n < boxes.length;
    });
  });
})();
