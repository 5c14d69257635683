console.log(2)
